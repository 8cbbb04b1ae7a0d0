import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { centsToMicros, formatUsd, microsToCents, microsToUsd, usdToMicros } from './money.ts';

describe('money', () => {
  it('USD in becomes integer µUSD, rounded to the nearest µUSD', () => {
    assert.equal(usdToMicros(1), 1_000_000);
    assert.equal(usdToMicros(0.1 + 0.2), 300_000);
    assert.equal(usdToMicros(12.3456785), 12_345_679);
  });

  it('µUSD out is a USD number, text with fixed decimals, or whole cents', () => {
    assert.equal(microsToUsd(1_234_567), 1.234567);
    assert.equal(microsToUsd(0.6), 0.000001);
    assert.equal(formatUsd(1_234_567, 2), '1.23');
    assert.equal(formatUsd(5, 6), '0.000005');
    assert.equal(microsToCents(20_004_999), 2000);
    assert.equal(microsToCents(20_005_000), 2001);
    assert.equal(centsToMicros(2001), 20_010_000);
  });
});
