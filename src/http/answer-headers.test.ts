import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { answerHeaders } from './answer-headers.ts';

describe('answer headers', () => {
  it('a whole answer: the rate limits, then the overhead and the cost, in that order', () => {
    const headers = answerHeaders({
      rateLimits: {
        requests: { limit: 10, remaining: 9, resetMs: 6000 },
        tokens: { limit: 1000, remaining: 900, resetMs: 60_000 },
      },
      overheadMs: 1.23456,
      costMicros: 1234,
    });
    assert.deepEqual(Object.entries(headers), [
      ['x-ratelimit-limit-requests', '10'],
      ['x-ratelimit-remaining-requests', '9'],
      ['x-ratelimit-reset-requests', '6s'],
      ['x-ratelimit-limit-tokens', '1000'],
      ['x-ratelimit-remaining-tokens', '900'],
      ['x-ratelimit-reset-tokens', '1m0s'],
      ['x-tollgate-overhead-ms', '1.235'],
      ['x-tollgate-cost-usd', '0.001234'],
    ]);
  });

  it('a stream opens without a cost, and an unlimited key has no x-ratelimit-* headers', () => {
    assert.deepEqual(answerHeaders({ rateLimits: {}, overheadMs: 20, costMicros: undefined }), {
      'x-tollgate-overhead-ms': '20.000',
    });
  });
});
