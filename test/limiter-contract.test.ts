import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import type { Limiter, LimitSet } from '../src/core/rate-limits.ts';
import { MemoryLimiter } from '../src/limits/memory-limiter.ts';
import { RedisLimiter } from '../src/limits/redis-limiter.ts';
import { REDIS_URL, redisUnavailable, testPrefix } from './helpers/redis.ts';

const FREE: LimitSet = { requestsPerMinute: 10, tokensPerMinute: 50_000, dailyTokens: 500_000 };
const START = Date.parse('2026-11-03T10:00:00Z');

interface Kind {
  name: string;
  skip: string | undefined;
  create(): Promise<{ limiter: Limiter; cleanup: () => Promise<void> }>;
}

const KINDS: Kind[] = [
  {
    name: 'memory',
    skip: undefined,
    create: async () => ({ limiter: new MemoryLimiter(), cleanup: async () => {} }),
  },
  {
    name: 'redis',
    skip: await redisUnavailable(),
    async create() {
      const { prefix, cleanup } = testPrefix();
      const client = new Redis(REDIS_URL);
      return {
        limiter: new RedisLimiter(client, prefix),
        async cleanup() {
          await cleanup();
          client.disconnect();
        },
      };
    },
  },
];

for (const kind of KINDS) {
  describe(`the ${kind.name} limiter`, { skip: kind.skip ?? false }, () => {
    let limiter: Limiter;
    let cleanup: () => Promise<void>;
    let n = 0;
    before(async () => ({ limiter, cleanup } = await kind.create()));
    after(async () => cleanup?.());

    const admit = (subject: string, now: number, tokens = 0, limits: LimitSet = FREE) =>
      limiter.admit({ subject, requestId: `r${n++}`, limits, tokens, now });

    it('admits exactly the requests per minute, and a refusal takes nothing', async () => {
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => admit('rpm', START + i)));
      assert.equal(results.filter((r) => r.allowed).length, 10);
      const refused = results.filter((r) => !r.allowed);
      assert.equal(refused.length, 2);
      assert.equal(refused[0]!.reason, 'requests');
      const last = results.at(-1)!;
      assert.equal(last.allowed, false);
      // The window slides: the first request ages out 60 s after it was admitted, and then one more fits.
      assert.ok(
        last.retryAfterMs! > 59_000 && last.retryAfterMs! <= 60_000,
        `retry after ${last.retryAfterMs}`,
      );
      assert.equal((await admit('rpm', START + 59_999)).allowed, false);
      assert.equal((await admit('rpm', START + 60_000)).allowed, true);
      assert.equal((await admit('rpm', START + 60_000)).allowed, false);
    });

    it('Retry-After is truthful: retrying then succeeds', async () => {
      for (let i = 0; i < 10; i++) await admit('truth', START + i * 1000);
      const refused = await admit('truth', START + 30_000);
      assert.equal(refused.allowed, false);
      assert.equal((await admit('truth', START + 30_000 + refused.retryAfterMs! - 1)).allowed, false);
      assert.equal((await admit('truth', START + 30_000 + refused.retryAfterMs!)).allowed, true);
    });

    it('tokens per minute trip at the right count, and reconcile gives unused tokens back', async () => {
      const limits: LimitSet = { requestsPerMinute: null, tokensPerMinute: 1_000, dailyTokens: null };
      assert.equal(
        (await limiter.admit({ subject: 'tpm', requestId: 'a', limits, tokens: 600, now: START })).allowed,
        true,
      );
      assert.equal(
        (await limiter.admit({ subject: 'tpm', requestId: 'b', limits, tokens: 400, now: START + 10 }))
          .allowed,
        true,
      );
      const over = await limiter.admit({
        subject: 'tpm',
        requestId: 'c',
        limits,
        tokens: 1,
        now: START + 20,
      });
      assert.equal(over.allowed, false);
      assert.equal(over.reason, 'tokens');
      assert.equal(over.retryAfterMs, 60_000 - 20, 'the first reservation must age out');
      await limiter.reconcile('tpm', 'a', 600, 250, START + 30);
      const fits = await limiter.admit({
        subject: 'tpm',
        requestId: 'd',
        limits,
        tokens: 350,
        now: START + 40,
      });
      assert.equal(fits.allowed, true);
      assert.equal(fits.tokens?.remaining, 0);
      assert.equal(
        (await limiter.admit({ subject: 'tpm', requestId: 'e', limits, tokens: 1, now: START + 50 })).allowed,
        false,
      );
      assert.equal(
        (await limiter.admit({ subject: 'tpm', requestId: 'f', limits, tokens: 1, now: START + 60_000 }))
          .allowed,
        true,
      );
    });

    it('the daily cap trips at its token count and waits until the next UTC midnight', async () => {
      const limits: LimitSet = { requestsPerMinute: null, tokensPerMinute: null, dailyTokens: 1_000 };
      const noon = Date.parse('2026-11-03T12:00:00Z');
      assert.equal(
        (await limiter.admit({ subject: 'day', requestId: 'd1', limits, tokens: 900, now: noon })).allowed,
        true,
      );
      await limiter.reconcile('day', 'd1', 900, 990, noon + 1);
      assert.equal(await limiter.dailyTokens('day', noon + 2), 990);
      const over = await limiter.admit({
        subject: 'day',
        requestId: 'd2',
        limits,
        tokens: 11,
        now: noon + 3,
      });
      assert.equal(over.allowed, false);
      assert.equal(over.reason, 'daily');
      assert.equal(over.retryAfterMs, 12 * 3_600_000 - 3);
      assert.equal(
        (await limiter.admit({ subject: 'day', requestId: 'd3', limits, tokens: 10, now: noon + 4 })).allowed,
        true,
      );
      const tomorrow = Date.parse('2026-11-04T00:00:00Z');
      assert.equal(
        (await limiter.admit({ subject: 'day', requestId: 'd4', limits, tokens: 1_000, now: tomorrow }))
          .allowed,
        true,
      );
    });

    it('release gives back a request and its tokens', async () => {
      const limits: LimitSet = { requestsPerMinute: 1, tokensPerMinute: 100, dailyTokens: 100 };
      assert.equal(
        (await limiter.admit({ subject: 'rel', requestId: 'x', limits, tokens: 100, now: START })).allowed,
        true,
      );
      await limiter.release('rel', 'x', 100, START + 1);
      assert.equal(
        (await limiter.admit({ subject: 'rel', requestId: 'y', limits, tokens: 100, now: START + 2 }))
          .allowed,
        true,
      );
    });

    it('the window slides exactly over minutes of traffic at the limit', async () => {
      const limits: LimitSet = { requestsPerMinute: 2_500, tokensPerMinute: null, dailyTokens: null };
      for (let minute = 0; minute < 3; minute++) {
        const base = START + minute * 60_000;
        const results = await Promise.all(
          Array.from({ length: 2_500 }, (_, i) => admit('long', base + i * 20, 0, limits)),
        );
        assert.equal(results.filter((r) => r.allowed).length, 2_500, `minute ${minute}: all admitted`);
        const over = await admit('long', base + 59_999, 0, limits);
        assert.equal(over.allowed, false, `minute ${minute}: the next one is refused`);
        assert.equal(over.retryAfterMs, 1);
      }
    });

    it('with only a daily cap, release gives the day’s tokens back', async () => {
      const limits: LimitSet = { requestsPerMinute: null, tokensPerMinute: null, dailyTokens: 1_000 };
      const at = START + 5_000;
      assert.equal(
        (await limiter.admit({ subject: 'daily-only', requestId: 'p', limits, tokens: 800, now: at }))
          .allowed,
        true,
      );
      await limiter.release('daily-only', 'p', 800, at + 1);
      assert.equal(
        (await limiter.admit({ subject: 'daily-only', requestId: 'q', limits, tokens: 900, now: at + 2 }))
          .allowed,
        true,
      );
    });

    it('reset is the time until the oldest request in the window ages out, on admissions and refusals', async () => {
      const limits: LimitSet = { requestsPerMinute: 3, tokensPerMinute: 1_000, dailyTokens: null };
      const first = await admit('reset', START, 100, limits);
      assert.deepEqual(first.requests, { limit: 3, remaining: 2, resetMs: 60_000 });
      assert.deepEqual(first.tokens, { limit: 1_000, remaining: 900, resetMs: 60_000 });
      const second = await admit('reset', START + 20_000, 200, limits);
      assert.deepEqual(second.requests, { limit: 3, remaining: 1, resetMs: 40_000 });
      assert.deepEqual(second.tokens, { limit: 1_000, remaining: 700, resetMs: 40_000 });
      await admit('reset', START + 30_000, 100, limits);
      const refused = await admit('reset', START + 54_000, 100, limits);
      assert.equal(refused.allowed, false);
      assert.equal(refused.reason, 'requests');
      assert.equal(refused.retryAfterMs, 6_000);
      // A refusal reports the window as it stands, nothing taken: the same state a 200 would have shown.
      assert.deepEqual(refused.requests, { limit: 3, remaining: 0, resetMs: 6_000 });
      assert.deepEqual(refused.tokens, { limit: 1_000, remaining: 600, resetMs: 6_000 });
      // Once the first request ages out, the oldest is the one taken at +20 s.
      const later = await admit('reset', START + 60_000, 100, limits);
      assert.equal(later.allowed, true);
      assert.deepEqual(later.requests, { limit: 3, remaining: 0, resetMs: 20_000 });
      assert.deepEqual(later.tokens, { limit: 1_000, remaining: 600, resetMs: 20_000 });
    });

    it('a refusal for tokens reports both dimensions, and an empty window resets in 0 ms', async () => {
      const limits: LimitSet = { requestsPerMinute: 5, tokensPerMinute: 500, dailyTokens: 10_000 };
      const tooBig = await admit('reset-tokens', START, 600, limits);
      assert.equal(tooBig.allowed, false);
      assert.equal(tooBig.reason, 'tokens');
      assert.deepEqual(tooBig.requests, { limit: 5, remaining: 5, resetMs: 0 });
      assert.deepEqual(tooBig.tokens, { limit: 500, remaining: 500, resetMs: 0 });
      await admit('reset-tokens', START + 1_000, 400, limits);
      const over = await admit('reset-tokens', START + 1_500, 200, limits);
      assert.equal(over.reason, 'tokens');
      assert.equal(over.retryAfterMs, 59_500);
      assert.deepEqual(over.requests, { limit: 5, remaining: 4, resetMs: 59_500 });
      assert.deepEqual(over.tokens, { limit: 500, remaining: 100, resetMs: 59_500 });
      const daily: LimitSet = { requestsPerMinute: 5, tokensPerMinute: null, dailyTokens: 100 };
      const capped = await admit('reset-daily', START, 101, daily);
      assert.equal(capped.reason, 'daily');
      assert.deepEqual(capped.requests, { limit: 5, remaining: 5, resetMs: 0 });
      assert.equal(capped.tokens, undefined, 'an unlimited dimension is not reported');
    });

    it('unlimited dimensions never refuse and send no headers', async () => {
      const limits: LimitSet = { requestsPerMinute: null, tokensPerMinute: null, dailyTokens: null };
      const results = await Promise.all(
        Array.from({ length: 50 }, () => admit('free-for-all', START, 1_000_000, limits)),
      );
      assert.ok(results.every((r) => r.allowed && !r.requests && !r.tokens));
    });
  });
}
