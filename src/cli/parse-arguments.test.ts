import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidArgumentError } from 'commander';
import {
  isBareDate,
  parseAmountUsd,
  parseCount,
  parseDateOrInstant,
  parseInstant,
  parseList,
} from './parse-arguments.ts';

describe('CLI argument parsers', () => {
  it('an amount is positive USD with at most six decimals', () => {
    assert.equal(parseAmountUsd('25'), 25);
    assert.equal(parseAmountUsd('2.500001'), 2.500001);
    for (const bad of ['0', '-5', '1e3', '2.5000001', 'ten', '', '12345678'])
      assert.throws(() => parseAmountUsd(bad), InvalidArgumentError, bad);
  });

  it('a count is a whole number', () => {
    assert.equal(parseCount('0'), 0);
    assert.equal(parseCount('500'), 500);
    for (const bad of ['-1', '1.5', 'x', '']) assert.throws(() => parseCount(bad), InvalidArgumentError, bad);
  });

  it('a date or date-time passes as typed; parseInstant turns it into an ISO instant', () => {
    assert.equal(parseDateOrInstant('2026-12-31'), '2026-12-31');
    assert.equal(parseDateOrInstant('2026-12-31T12:00:00+02:00'), '2026-12-31T12:00:00+02:00');
    assert.equal(parseInstant('2026-12-31'), '2026-12-31T00:00:00.000Z');
    assert.equal(parseInstant('2026-12-31T12:00:00+02:00'), '2026-12-31T10:00:00.000Z');
    assert.equal(isBareDate('2026-12-31'), true);
    assert.equal(isBareDate('2026-12-31T00:00Z'), false);
    for (const bad of ['2026-13-01', '31/12/2026', '2026-12-31T12:00', 'tomorrow', '2026-12-31 12:00Z'])
      assert.throws(() => parseDateOrInstant(bad), InvalidArgumentError, bad);
  });

  it('a list is split on commas, empty items dropped', () => {
    assert.deepEqual(parseList('model-a, model-b,,'), ['model-a', 'model-b']);
  });
});
