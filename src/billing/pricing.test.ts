import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { costMicros } from './pricing.ts';

// The spec's price table, in µUSD per million tokens: model-a input 3.50 / output 18.00, model-b 0.13.
const MODEL_A = { inputMicrosPerMillion: 3_500_000, outputMicrosPerMillion: 18_000_000 };
const MODEL_B = { inputMicrosPerMillion: 130_000, outputMicrosPerMillion: 130_000 };

describe('costMicros (the price of one request)', () => {
  it('prices prompt at the input rate and completion at the output rate', () => {
    // 1M prompt tokens of model-a cost $3.50; 1M completion tokens cost $18.00.
    assert.equal(costMicros(MODEL_A, 1_000_000, 0), 3_500_000);
    assert.equal(costMicros(MODEL_A, 0, 1_000_000), 18_000_000);
    assert.equal(costMicros(MODEL_A, 1_000_000, 1_000_000), 21_500_000);
    assert.equal(costMicros(MODEL_A, 2_000, 500), 7_000 + 9_000);
  });

  it('rounds up once per request, to the next whole µUSD', () => {
    // 10 tokens of model-b: 10 × 0.13 = 1.3 µUSD → 2.
    assert.equal(costMicros(MODEL_B, 10, 0), 2);
    assert.equal(costMicros(MODEL_B, 0, 10), 2);
    assert.equal(costMicros(MODEL_B, 3, 4), 1); // 0.91 µUSD → 1; per-side ceilings would give 2
    assert.equal(costMicros(MODEL_B, 100, 0), 13); // exact: no rounding up
  });

  it('costs nothing for nothing', () => {
    assert.equal(costMicros(MODEL_A, 0, 0), 0);
  });
});
