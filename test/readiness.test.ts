import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { REASSERT_FENCE_MS, RedisHoldBook } from '../src/billing/redis-hold-book.ts';
import type { LedgerRepo } from '../src/store/ledger-repo.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { REDIS_URL, redisUnavailable, testPrefix } from './helpers/redis.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

const sqlite = BACKENDS.find((b) => b.name === 'sqlite');

describe('readiness apart from liveness', { skip: sqlite ? false : 'SQLite backend excluded' }, () => {
  let backend: OpenedBackend;
  let server: TestServer;
  before(async () => {
    backend = await sqlite!.open();
    server = await startTestServer({ backend });
  });
  after(async () => {
    await server?.close();
    await backend?.cleanup();
  });

  it('answers 503 naming each unmet condition, with Retry-After, while /health says ok; then 200', async () => {
    let met = false;
    server.services.readiness.require('an example condition', () => met);
    server.services.readiness.require('a failing check', () => {
      if (!met) throw new Error('not yet');
      return true;
    });
    const health = await server.call('GET', '/health');
    assert.equal(health.status, 200);
    const waiting = await server.call('GET', '/health/ready');
    assert.equal(waiting.status, 503);
    assert.equal(waiting.headers.get('retry-after'), '1');
    assert.equal(waiting.headers.get('retry-after-ms'), '1000');
    assert.equal(waiting.body.error.code, 'service_unavailable');
    assert.equal(waiting.body.error.type, 'api_error');
    assert.match(waiting.body.error.message, /an example condition, a failing check/);
    met = true;
    const ready = await server.call('GET', '/health/ready');
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body, { status: 'ready' });
  });
});

const redisSkip = await redisUnavailable();

describe(
  'holds in Redis: ready once a new generation’s fence has passed',
  { skip: redisSkip ?? false },
  () => {
    const { prefix, cleanup } = testPrefix();
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    after(async () => {
      redis.disconnect();
      await cleanup();
    });

    it('is not ready during the fence of the generation it created, ready after, without a hold', async () => {
      const book = new RedisHoldBook({
        redis,
        ledger: {} as LedgerRepo,
        logger: pino({ level: 'silent' }),
        prefix,
      });
      assert.equal(book.ready(), false, 'not ready before start');
      const started = Date.now();
      await book.start();
      try {
        const fence = await redis.pttl(`${prefix}:hold:fence`);
        assert.ok(fence > 0, 'the first instance of an empty Redis created the fence');
        if (Date.now() - started < REASSERT_FENCE_MS - 500)
          assert.equal(book.ready(), false, 'not ready while the fence is in force');
        const deadline = started + REASSERT_FENCE_MS + 5_000;
        while (!book.ready() && Date.now() < deadline)
          await new Promise((resolve) => setTimeout(resolve, 20));
        assert.equal(book.ready(), true, 'ready once the fence has passed');
        assert.ok(Date.now() - started >= REASSERT_FENCE_MS - 50, 'not before the fence ends');

        // A second instance joining the running generation is ready at once.
        const joining = new RedisHoldBook({
          redis,
          ledger: {} as LedgerRepo,
          logger: pino({ level: 'silent' }),
          prefix,
        });
        await joining.start();
        assert.equal(joining.ready(), true);
        await joining.close();
      } finally {
        await book.close();
      }
    });
  },
);
