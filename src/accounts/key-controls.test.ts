import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { periodEndMs, periodFirstDay, periodStartMs } from './key-controls.ts';

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

describe('key limit periods (calendar UTC)', () => {
  it('a day runs from 00:00 to the next 00:00 UTC', () => {
    assert.equal(iso(periodStartMs('daily', at('2026-11-03T23:59:59.999Z'))), '2026-11-03T00:00:00.000Z');
    assert.equal(iso(periodEndMs('daily', at('2026-11-03T23:59:59.999Z'))), '2026-11-04T00:00:00.000Z');
    assert.equal(iso(periodStartMs('daily', at('2026-11-04T00:00:00.000Z'))), '2026-11-04T00:00:00.000Z');
  });

  it('a week is the ISO week: Monday 00:00 to the next Monday', () => {
    // 2026-11-02 is a Monday; 2026-11-08 a Sunday.
    for (const day of ['2026-11-02T00:00:00Z', '2026-11-05T12:00:00Z', '2026-11-08T23:59:59Z']) {
      assert.equal(iso(periodStartMs('weekly', at(day))), '2026-11-02T00:00:00.000Z', day);
      assert.equal(iso(periodEndMs('weekly', at(day))), '2026-11-09T00:00:00.000Z', day);
    }
    assert.equal(iso(periodStartMs('weekly', at('2026-11-01T23:59:59Z'))), '2026-10-26T00:00:00.000Z');
    // A week across the new year.
    assert.equal(iso(periodStartMs('weekly', at('2027-01-01T08:00:00Z'))), '2026-12-28T00:00:00.000Z');
  });

  it('a month is the calendar month, across year ends and leap days', () => {
    assert.equal(iso(periodStartMs('monthly', at('2026-12-31T23:00:00Z'))), '2026-12-01T00:00:00.000Z');
    assert.equal(iso(periodEndMs('monthly', at('2026-12-31T23:00:00Z'))), '2027-01-01T00:00:00.000Z');
    assert.equal(iso(periodEndMs('monthly', at('2028-02-29T12:00:00Z'))), '2028-03-01T00:00:00.000Z');
  });

  it('never has no end and counts every usage day', () => {
    assert.equal(periodEndMs('never', at('2026-11-03T10:00:00Z')), null);
    assert.ok(periodFirstDay('never', at('2026-11-03T10:00:00Z')) < '1970-01-01');
    assert.equal(periodFirstDay('weekly', at('2026-11-03T10:00:00Z')), '2026-11-02');
    assert.equal(periodFirstDay('monthly', at('2026-11-03T10:00:00Z')), '2026-11-01');
  });
});
