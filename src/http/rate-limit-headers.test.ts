import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatReset, rateLimitHeaders } from './rate-limit-headers.ts';

describe('rate-limit headers', () => {
  it('reset times read as Go durations, the way OpenAI sends them', () => {
    const cases: [number, string][] = [
      [0, '0s'],
      [-5, '0s'],
      [0.2, '1ms'],
      [20, '20ms'],
      [999, '999ms'],
      [1000, '1s'],
      [1500, '1.5s'],
      [6000, '6s'],
      [8640, '8.64s'],
      [59_999, '59.999s'],
      [59_999.5, '1m0s'],
      [60_000, '1m0s'],
      [61_500, '1m1.5s'],
      [119_600, '1m59.6s'],
      [360_000, '6m0s'],
      [3_723_000, '1h2m3s'],
      [86_400_000, '24h0m0s'],
    ];
    for (const [ms, text] of cases) assert.equal(formatReset(ms), text, `${ms} ms`);
  });

  it('a refusal reports each limited dimension, and an unlimited one is left out', () => {
    const headers = rateLimitHeaders({
      requests: { limit: 10, remaining: 0, resetMs: 6000 },
    });
    assert.deepEqual(headers, {
      'x-ratelimit-limit-requests': '10',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': '6s',
    });
  });
});
