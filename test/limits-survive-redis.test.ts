import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { LimitSet } from '../src/core/rate-limits.ts';
import { RedisLimiter } from '../src/limits/redis-limiter.ts';
import type { LimiterFailure } from '../src/core/rate-limits.ts';
import { ResilientLimiter } from '../src/limits/resilient-limiter.ts';
import { REDIS_URL, redisUnavailable, testPrefix } from './helpers/redis.ts';
import { redisServerMissing, startRedisCluster, startRedisServer } from './helpers/redis-server.ts';

const START = Date.parse('2026-11-03T10:00:00Z');
const DAILY: LimitSet = { requestsPerMinute: null, tokensPerMinute: null, dailyTokens: 1_000 };

/** Until the client has (re)connected. */
async function ready(client: Redis): Promise<void> {
  while (client.status !== 'ready') await new Promise((resolve) => setTimeout(resolve, 10));
}

/** A logger that keeps what was logged at error level (what an operator would see). */
function recordingLogger(): { logger: Logger; errors: string[] } {
  const errors: string[] = [];
  const quiet = (): void => {};
  const logger = {
    error: (_: unknown, message: string) => errors.push(message),
    warn: quiet,
    info: quiet,
    debug: quiet,
  } as unknown as Logger;
  return { logger, errors };
}

describe('the Redis limiter under a backlog', { skip: (await redisUnavailable()) ?? false }, () => {
  let client: Redis;
  let cleanup: () => Promise<void>;
  let limiter: RedisLimiter;
  before(() => {
    const own = testPrefix();
    cleanup = own.cleanup;
    client = new Redis(REDIS_URL);
    limiter = new RedisLimiter(client, own.prefix);
  });
  after(async () => {
    await cleanup();
    client.disconnect();
  });

  it('cleans more than 8,000 expired token reservations in one admission (Lua unpack has a limit)', async () => {
    const limits: LimitSet = { requestsPerMinute: null, tokensPerMinute: 1_000_000, dailyTokens: null };
    const entries = 9_000;
    for (let batch = 0; batch < entries; batch += 3_000) {
      await Promise.all(
        Array.from({ length: 3_000 }, (_, i) =>
          limiter.admit({ subject: 'backlog', requestId: `b${batch + i}`, limits, tokens: 10, now: START }),
        ),
      );
    }
    const later = await limiter.admit({
      subject: 'backlog',
      requestId: 'after',
      limits,
      tokens: 10,
      now: START + 60_001,
    });
    assert.equal(later.allowed, true);
    // Every expired reservation was given back: only the new one is in the window.
    assert.equal(later.tokens!.remaining, 1_000_000 - 10);
  });
});

describe('limits that survive Redis', { skip: (await redisUnavailable()) ?? false }, () => {
  let client: Redis;
  let prefix: string;
  let cleanup: () => Promise<void>;
  before(() => {
    ({ prefix, cleanup } = testPrefix());
    client = new Redis(REDIS_URL);
  });
  after(async () => {
    await cleanup();
    client.disconnect();
  });

  it('a daily cap whose day Redis lost is seeded from the ledger, once, and not reopened', async () => {
    const limiter = new RedisLimiter(client, prefix);
    let reads = 0;
    limiter.useDailySource(async () => {
      reads++;
      return 900;
    });
    const admit = (requestId: string, tokens: number) =>
      limiter.admit({ subject: 'seeded', requestId, limits: DAILY, tokens, now: START });
    const first = await Promise.all([admit('a', 50), admit('b', 200), admit('c', 10)]);
    assert.deepEqual(
      first.map((a) => a.allowed),
      [true, false, true],
    );
    assert.equal(first[1].reason, 'daily');
    assert.equal(reads, 1, 'concurrent admissions read the ledger once');
    assert.equal(await limiter.dailyTokens('seeded', START), 960);
    // Redis restarted empty (or failed over to a replica that never saw the day): the day is read again.
    const keys = await client.keys(`${prefix}:{seeded}:*`);
    await client.del(...keys);
    assert.equal((await admit('d', 200)).allowed, false);
    assert.equal(reads, 2);
    // A key without a daily cap never reads the ledger.
    await limiter.admit({
      subject: 'uncapped',
      requestId: 'e',
      limits: { requestsPerMinute: 10, tokensPerMinute: null, dailyTokens: null },
      tokens: 5_000,
      now: START,
    });
    assert.equal(reads, 2);
  });

  it('a script error is a visible failure: logged once, counted, health degraded, then recovered', async () => {
    const { logger, errors } = recordingLogger();
    const limiter = new ResilientLimiter(new RedisLimiter(client, prefix), 'local', logger);
    const failures: LimiterFailure[] = [];
    limiter.onFailure((kind) => failures.push(kind));
    const limits: LimitSet = { requestsPerMinute: 2, tokensPerMinute: null, dailyTokens: null };
    const admit = (requestId: string) =>
      limiter.admit({ subject: 'broken', requestId, limits, tokens: 1, now: START });
    // A key of the wrong type makes the script fail while the connection is fine.
    await client.set(`${prefix}:{broken}:req`, 'not a sorted set');
    const during = [await admit('a'), await admit('b'), await admit('c')];
    // The failure policy (local) still limits, per instance.
    assert.deepEqual(
      during.map((a) => a.allowed),
      [true, true, false],
    );
    assert.deepEqual(failures, ['script', 'script', 'script']);
    assert.equal(errors.length, 1, `logged once: ${errors.join(' | ')}`);
    assert.match(errors[0]!, /Redis limiter fails/);
    assert.equal(limiter.healthy(), false, '/health reports degraded');
    assert.equal(limiter.failure(), 'script');
    await client.del(`${prefix}:{broken}:req`);
    assert.equal((await admit('d')).allowed, true);
    assert.equal(limiter.healthy(), true);
    assert.equal(limiter.failure(), undefined);
  });

  it('the local fallback honours daily caps, seeded from the ledger', async () => {
    const unreachable = new Redis({
      port: 1,
      host: '127.0.0.1',
      lazyConnect: true,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    unreachable.on('error', () => {});
    const { logger } = recordingLogger();
    const limiter = new ResilientLimiter(new RedisLimiter(unreachable, prefix), 'local', logger);
    const failures: LimiterFailure[] = [];
    limiter.onFailure((kind) => failures.push(kind));
    limiter.useDailySource(async () => 900);
    const admit = (requestId: string, tokens: number) =>
      limiter.admit({ subject: 'fallback-daily', requestId, limits: DAILY, tokens, now: START });
    assert.equal((await admit('a', 200)).reason, 'daily');
    assert.equal((await admit('b', 100)).allowed, true);
    assert.equal((await admit('c', 1)).allowed, false);
    assert.equal(failures[0], 'unreachable');
    assert.equal(limiter.healthy(), false);
    unreachable.disconnect();
  });
});

describe('limits on Redis servers of the test’s own', { skip: (await redisServerMissing()) ?? false }, () => {
  it('work on a three-node Redis Cluster: every key of a subject shares one slot', async () => {
    const cluster = await startRedisCluster();
    const client = new Cluster(cluster.nodes, { redisOptions: { maxRetriesPerRequest: 1 } });
    client.on('error', () => {});
    try {
      const limiter = new RedisLimiter(client, 'tg');
      limiter.useDailySource(async () => 0);
      const limits: LimitSet = { requestsPerMinute: 5, tokensPerMinute: 1_000, dailyTokens: 2_000 };
      // Many subjects, so that they spread over all three nodes' slots.
      for (let subject = 0; subject < 12; subject++) {
        const results = await Promise.all(
          Array.from({ length: 7 }, (_, i) =>
            limiter.admit({ subject: `key${subject}`, requestId: `r${i}`, limits, tokens: 100, now: START }),
          ),
        );
        assert.equal(results.filter((r) => r.allowed).length, 5, `key${subject}`);
        await limiter.reconcile(`key${subject}`, 'r0', 100, 40, START);
        await limiter.release(`key${subject}`, 'r1', 100, START);
        assert.equal(await limiter.dailyTokens(`key${subject}`, START), 340);
      }
      // The subjects spread over the cluster: at least two of the three nodes hold some.
      const sizes = await Promise.all(client.nodes('master').map((node) => node.dbsize()));
      assert.ok(sizes.filter((size) => size > 0).length >= 2, `keys per node: ${sizes.join(', ')}`);
    } finally {
      client.disconnect();
      await cluster.stop();
    }
  });

  it('a Redis restarted empty reopens no daily cap and serves again by itself', async () => {
    const server = await startRedisServer();
    const client = new Redis(server.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      retryStrategy: () => 20,
    });
    client.on('error', () => {});
    const { logger } = recordingLogger();
    const limiter = new ResilientLimiter(new RedisLimiter(client, 'tg'), 'local', logger);
    let ledger = 0;
    limiter.useDailySource(async () => ledger);
    try {
      await ready(client);
      const admit = (requestId: string, tokens: number) =>
        limiter.admit({ subject: 'k', requestId, limits: DAILY, tokens, now: START });
      assert.equal((await admit('a', 600)).allowed, true);
      ledger = 600; // it settled
      const closed = new Promise((resolve) => client.once('close', resolve));
      await server.restart();
      await closed;
      await ready(client);
      assert.equal(limiter.healthy(), true);
      assert.equal((await admit('b', 600)).reason, 'daily');
      assert.equal((await admit('c', 400)).allowed, true);
      assert.equal(await limiter.dailyTokens('k', START), 1_000);
    } finally {
      client.disconnect();
      await server.stop();
    }
  });
});
