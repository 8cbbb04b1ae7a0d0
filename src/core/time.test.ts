import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DAY_MS, utcDay } from './time.ts';

describe('time', () => {
  it('utcDay names the UTC calendar day, changing exactly at midnight', () => {
    const midnight = Date.parse('2026-11-04T00:00:00Z');
    assert.equal(utcDay(midnight - 1), '2026-11-03');
    assert.equal(utcDay(midnight), '2026-11-04');
    assert.equal(utcDay(midnight + DAY_MS - 1), '2026-11-04');
    assert.equal(utcDay(midnight - 1), '2026-11-03', 'the one-entry memory follows the argument back');
  });
});
