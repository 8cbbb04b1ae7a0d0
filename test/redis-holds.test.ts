import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { costMicros } from '../src/billing/pricing.ts';
import type { RedisHoldBook } from '../src/billing/redis-hold-book.ts';
import { settlementOf } from '../src/billing/testing.ts';
import { countPromptTokens } from '../src/gateway/count-tokens.ts';
import { connectRedis } from '../src/composition/connect-redis.ts';
import { GatewayError } from '../src/core/gateway-error.ts';
import { microsToUsd } from '../src/core/money.ts';
import { createStore, type Store } from '../src/store/store.ts';
import { BACKENDS, insertFundedAccount, type OpenedBackend } from './helpers/backends.ts';
import { REDIS_URL, redisUnavailable, testPrefix } from './helpers/redis.ts';
import { redisServerMissing, startRedisCluster, startRedisServer } from './helpers/redis-server.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';

const silent = pino({ level: 'silent' });
const postgres = BACKENDS.find((b) => b.name === 'postgres');
const MESSAGES = [{ role: 'user' as const, content: 'Holds in Redis: answer briefly please.' }];
/** model-a's price for this prompt and 5 completion tokens: what each request holds and is charged. */
const EACH = costMicros(
  { inputMicrosPerMillion: 3_500_000, outputMicrosPerMillion: 18_000_000 },
  countPromptTokens(MESSAGES.map((m) => ({ ...m }))),
  5,
);

const skip =
  (await redisUnavailable()) ??
  (postgres ? await postgres.unavailable() : 'PostgreSQL backend excluded by TOLLGATE_TEST_BACKENDS');

describe('credit holds in Redis, two instances on one PostgreSQL', { skip: skip ?? false }, () => {
  let opened: OpenedBackend;
  let a: TestServer;
  let b: TestServer;
  const books: RedisHoldBook[] = [];
  const ledgers: Store[] = [];
  const redisPrefix = testPrefix();
  let redis: Redis;

  before(async () => {
    opened = await postgres!.open();
    redis = new Redis(REDIS_URL);
    const instance = async (): Promise<TestServer> => {
      const backends = connectRedis(REDIS_URL, 'local', silent, redisPrefix.prefix);
      await backends.ready(2000);
      const ledgerStore = createStore(opened.reopen());
      ledgers.push(ledgerStore);
      const holds = backends.holds(ledgerStore.ledger);
      books.push(holds);
      return startTestServer({
        backend: opened,
        ownConnection: true,
        yaml: { simulator: { chunk_interval_ms: 0 } },
        extra: { limiter: backends.limiter, bus: backends.bus, holds },
      });
    };
    a = await instance();
    b = await instance();
  });
  after(async () => {
    await a?.close();
    await b?.close();
    for (const store of ledgers) await store.close();
    redis?.disconnect();
    await opened?.cleanup();
    await redisPrefix.cleanup();
  });

  const chat = (server: TestServer, key: string) =>
    server.call('POST', '/v1/chat/completions', {
      key,
      body: { model: 'model-a', max_tokens: 5, messages: MESSAGES },
    });
  const enterprise = async () => {
    const registered = await a.registerOn('enterprise');
    return registered;
  };
  const settleAll = async (): Promise<void> => {
    await a.services.settlements.flush();
    await b.services.settlements.flush();
    // The Redis side of a committed batch runs right after the commit.
    await new Promise((resolve) => setTimeout(resolve, 100));
  };
  const redisHeld = async (accountId: string): Promise<{ held: number; holds: number }> => ({
    held: Number((await redis.hget(`${redisPrefix.prefix}:hold:{${accountId}}:bal`, 'held')) ?? 0),
    holds: await redis.hlen(`${redisPrefix.prefix}:hold:{${accountId}}:holds`),
  });
  const charged = async (accountId: string): Promise<{ micros: number; records: number }> => {
    const row = await opened.db.get<{ s: number | null; n: number | string }>(
      'SELECT CAST(SUM(cost_micros - uncollected_micros) AS BIGINT) AS s, COUNT(*) AS n FROM usage_records WHERE account_id = $1',
      [accountId],
    );
    return { micros: Number(row?.s ?? 0), records: Number(row?.n) };
  };

  it('100 concurrent requests across two instances against room for exactly 30: exactly 30 succeed, charges exact', async () => {
    const { key, accountId } = await enterprise();
    await opened.db.run(
      'UPDATE credit_grants SET amount_micros = $2, remaining_micros = $2 WHERE account_id = $1',
      [accountId, EACH * 30],
    );
    const responses = await Promise.all(Array.from({ length: 100 }, (_, i) => chat(i % 2 ? a : b, key)));
    const statuses = responses.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 200).length, 30, JSON.stringify(statuses));
    assert.equal(statuses.filter((s) => s === 402).length, 70);
    assert.ok(
      responses.filter((r) => r.status === 200).every((r) => r.headers.get('x-tollgate-cost-usd') !== null),
    );
    await settleAll();
    assert.deepEqual(await charged(accountId), { micros: EACH * 30, records: 30 });
    const credit = await opened.db.get<{ s: number | string }>(
      'SELECT CAST(SUM(remaining_micros) AS BIGINT) AS s FROM credit_grants WHERE account_id = $1',
      [accountId],
    );
    assert.equal(Number(credit?.s), 0, 'spent exactly the balance, never more');
    assert.deepEqual(await redisHeld(accountId), { held: 0, holds: 0 }, 'every Redis hold released');
    const rows = await opened.db.get<{ n: number | string }>(
      'SELECT COUNT(*) AS n FROM holds WHERE account_id = $1',
      [accountId],
    );
    assert.equal(Number(rows?.n), 0, 'no hold row in PostgreSQL: the hold path wrote nothing there');
  });

  it('the balance Redis knows follows settlements: a second wave spends exactly what is left', async () => {
    const { key, accountId } = await enterprise();
    await opened.db.run(
      'UPDATE credit_grants SET amount_micros = $2, remaining_micros = $2 WHERE account_id = $1',
      [accountId, EACH * 25],
    );
    const first = await Promise.all(Array.from({ length: 10 }, (_, i) => chat(i % 2 ? a : b, key)));
    assert.ok(first.every((r) => r.status === 200));
    await settleAll();
    // Redis now holds the balance as of the settlements' version (10 charged): 15 more fit, not 25.
    const second = await Promise.all(Array.from({ length: 40 }, (_, i) => chat(i % 2 ? a : b, key)));
    assert.equal(second.filter((r) => r.status === 200).length, 15);
    await settleAll();
    assert.deepEqual(await charged(accountId), { micros: EACH * 25, records: 25 });
  });

  it('a top-up is seen by the next request, though Redis knew a smaller balance', async () => {
    const { key, accountId } = await enterprise();
    await opened.db.run(
      'UPDATE credit_grants SET amount_micros = $2, remaining_micros = $2 WHERE account_id = $1',
      [accountId, EACH * 2],
    );
    assert.equal((await chat(a, key)).status, 200);
    assert.equal((await chat(b, key)).status, 200);
    assert.equal((await chat(a, key)).status, 402);
    await a.call('POST', `/api/admin/accounts/${accountId}/credits`, {
      key: ADMIN_KEY,
      body: { amount_usd: 1 },
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // the once-a-second re-read of a short account
    assert.equal((await chat(b, key)).status, 200);
  });

  it('a key spending limit holds across instances: 60 concurrent requests, room for 20', async () => {
    const owner = await enterprise();
    const limitMicros = EACH * 20 + Math.floor(EACH / 3);
    const created = await a.call('POST', '/api/keys', {
      key: owner.key,
      body: { limit_usd: limitMicros / 1e6, limit_period: 'daily' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const responses = await Promise.all(
      Array.from({ length: 60 }, (_, i) => chat(i % 2 ? a : b, created.body.key)),
    );
    const statuses = responses.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 200).length, 20, JSON.stringify(statuses));
    const refused = responses.find((r) => r.status === 402)!;
    assert.match(refused.body.error.message, /limit/);
    await settleAll();
    const row = await opened.db.get<{ s: number | null }>(
      'SELECT CAST(SUM(cost_micros - uncollected_micros) AS BIGINT) AS s FROM usage_records WHERE key_id = $1',
      [created.body.id],
    );
    assert.equal(Number(row?.s), EACH * 20);
  });

  it('GET /api/account counts the Redis holds of every instance in held_usd and available_usd', async () => {
    const { accountId, key } = await enterprise();
    await opened.db.run(
      'UPDATE credit_grants SET amount_micros = $2, remaining_micros = $2 WHERE account_id = $1',
      [accountId, EACH * 10],
    );
    const now = Date.now();
    // Requests in flight on each instance: one hold taken through a's book, two through b's.
    assert.equal(await books[0]!.hold('req_view_a', accountId, EACH, now, now + 3_600_000), true);
    assert.equal(await books[1]!.hold('req_view_b1', accountId, EACH, now, now + 3_600_000), true);
    assert.equal(await books[1]!.hold('req_view_b2', accountId, EACH, now, now + 3_600_000), true);
    for (const server of [a, b]) {
      const account = await server.call('GET', '/api/account', { key });
      assert.equal(account.status, 200);
      assert.equal(account.body.held_usd, microsToUsd(EACH * 3), 'every instance shows all three holds');
      assert.equal(account.body.available_usd, microsToUsd(EACH * 7));
      assert.equal(account.body.balance_usd, microsToUsd(EACH * 10), 'a hold is not a charge');
    }
    // Settled (charged nothing here): the holds are gone and so is what the account shows held.
    books[0]!.committed([settlementOf('req_view_a', accountId, 0, now)], new Map());
    books[1]!.committed(
      [settlementOf('req_view_b1', accountId, 0, now), settlementOf('req_view_b2', accountId, 0, now)],
      new Map(),
    );
    const started = Date.now();
    while ((await redisHeld(accountId)).holds > 0 && Date.now() - started < 5_000)
      await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal((await a.call('GET', '/api/account', { key })).body.held_usd, 0);
  });

  it('GET /api/key reads its live Redis holds of every instance in held_usd and remaining_usd', async () => {
    const owner = await enterprise();
    await opened.db.run(
      'UPDATE credit_grants SET amount_micros = $2, remaining_micros = $2 WHERE account_id = $1',
      [owner.accountId, EACH * 10],
    );
    const created = await a.call('POST', '/api/keys', {
      key: owner.key,
      body: { limit_usd: (EACH * 20) / 1e6, limit_period: 'daily' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const now = Date.now();
    const budget = {
      keyId: created.body.id,
      limitMicros: EACH * 20,
      fromDay: new Date(now).toISOString().slice(0, 10),
    };
    // Requests of this key in flight: one hold taken through a's book, two through b's; none was refused.
    assert.equal(
      await books[0]!.hold('req_key_a', owner.accountId, EACH, now, now + 3_600_000, budget),
      true,
    );
    assert.equal(
      await books[1]!.hold('req_key_b1', owner.accountId, EACH, now, now + 3_600_000, budget),
      true,
    );
    assert.equal(
      await books[1]!.hold('req_key_b2', owner.accountId, EACH, now, now + 3_600_000, budget),
      true,
    );
    for (const server of [a, b]) {
      const status = await server.call('GET', '/api/key', { key: created.body.key });
      assert.equal(status.status, 200, JSON.stringify(status.body));
      assert.equal(status.body.held_usd, microsToUsd(EACH * 3), 'every instance shows all three holds');
      assert.equal(status.body.remaining_usd, microsToUsd(EACH * 17));
    }
    books[0]!.committed([settlementOf('req_key_a', owner.accountId, 0, now)], new Map());
    books[1]!.committed(
      [
        settlementOf('req_key_b1', owner.accountId, 0, now),
        settlementOf('req_key_b2', owner.accountId, 0, now),
      ],
      new Map(),
    );
    const started = Date.now();
    while ((await redisHeld(owner.accountId)).holds > 0 && Date.now() - started < 5_000)
      await new Promise((resolve) => setTimeout(resolve, 20));
    const after = await b.call('GET', '/api/key', { key: created.body.key });
    assert.equal(after.body.held_usd, 0, 'released holds are gone from the figure at once');
    assert.equal(after.body.remaining_usd, microsToUsd(EACH * 20));
  });

  it('a dead instance’s holds are released by a survivor, and its finished requests are charged once', async () => {
    const { accountId } = await enterprise();
    await opened.db.run(
      'UPDATE credit_grants SET amount_micros = $2, remaining_micros = $2 WHERE account_id = $1',
      [accountId, EACH * 3],
    );
    // A third instance's book that takes two holds, journals one as finished, then stops beating (dies).
    const backends = connectRedis(REDIS_URL, 'local', silent, redisPrefix.prefix);
    await backends.ready(2000);
    const ledgerStore = createStore(opened.reopen());
    const dying = backends.holds(ledgerStore.ledger);
    await redis.zadd(`${redisPrefix.prefix}:hold:instances`, Date.now() + 500, dying.instanceId);
    const now = Date.now();
    const keyId = (await a.services.store.db.get<{ id: string }>(
      'SELECT id FROM api_keys WHERE account_id = $1',
      [accountId],
    ))!.id;
    assert.equal(await dying.hold('req_dead_unfinished', accountId, EACH, now, now + 3_600_000), true);
    assert.equal(await dying.hold('req_dead_finished', accountId, EACH, now, now + 3_600_000), true);
    await dying.finished({
      requestId: 'req_dead_finished',
      accountId,
      keyId,
      model: 'model-a',
      deployment: 'model-a-sim',
      promptTokens: 10,
      completionTokens: 5,
      estimated: false,
      costMicros: EACH,
      status: 'ok',
      latencyMs: 5,
      ttftMs: null,
      createdAt: now,
    });
    assert.deepEqual(await redisHeld(accountId), { held: EACH * 2, holds: 2 });
    // Within the lease plus one heartbeat, a survivor releases one hold and charges the other.
    const started = Date.now();
    while ((await redisHeld(accountId)).holds > 0 && Date.now() - started < 5_000)
      await new Promise((resolve) => setTimeout(resolve, 100));
    await settleAll();
    assert.deepEqual(await redisHeld(accountId), { held: 0, holds: 0 });
    assert.deepEqual(await charged(accountId), { micros: EACH, records: 1 });
    const record = await opened.db.get<{ request_id: string }>(
      'SELECT request_id FROM usage_records WHERE account_id = $1',
      [accountId],
    );
    assert.equal(record?.request_id, 'req_dead_finished');
    await backends.bus.close();
    await ledgerStore.close();
  });
});

const clusterSkip =
  (await redisServerMissing()) ??
  (postgres ? await postgres.unavailable() : 'PostgreSQL backend excluded by TOLLGATE_TEST_BACKENDS');

describe('credit holds on a three-node Redis Cluster', { skip: clusterSkip ?? false }, () => {
  it('a redis-cluster:// URL connects; 50 concurrent holds against room for 20 take exactly 20', async () => {
    const cluster = await startRedisCluster();
    const opened = await postgres!.open();
    const store = createStore(opened.db);
    const url = `redis-cluster://${cluster.nodes.map((n) => `${n.host}:${n.port}`).join(',')}`;
    const backends = connectRedis(url, 'local', silent);
    try {
      assert.equal(await backends.ready(5_000), true);
      const now = Date.now();
      await opened.db.run(
        "INSERT INTO accounts (id, email, password_hash, plan, created_at) VALUES ('acct_cluster', 'c@example.com', 'x', 'enterprise', $1)",
        [now],
      );
      await store.ledger.addGrant({
        id: 'grant_cluster',
        accountId: 'acct_cluster',
        kind: 'admin',
        amountMicros: 20 * 1_000,
        remainingMicros: 20 * 1_000,
        expiresAt: now + 86_400_000,
        createdAt: now,
        source: null,
      });
      const book = backends.holds(store.ledger);
      await book.start(() => {});
      const taken = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          book.hold(`req_c${i}`, 'acct_cluster', 1_000, now, now + 60_000, {
            keyId: 'key_c',
            limitMicros: null,
            fromDay: '0000-01-01',
          }),
        ),
      );
      assert.equal(taken.filter(Boolean).length, 20);
      await book.close();
    } finally {
      await backends.bus.close();
      await opened.cleanup();
      await cluster.stop();
    }
  });
});

describe('credit holds when Redis restarts empty or goes away', { skip: clusterSkip ?? false }, () => {
  it('restarted empty with holds outstanding: their instance puts them back before anyone holds again', async () => {
    const own = await startRedisServer();
    const opened = await postgres!.open();
    const store = createStore(opened.db);
    const first = connectRedis(own.url, 'local', silent);
    const second = connectRedis(own.url, 'local', silent);
    try {
      await first.ready(2_000);
      await second.ready(2_000);
      await insertFundedAccount(opened, store, 'acct_restart', 10_000);
      const a = first.holds(store.ledger);
      const b = second.holds(store.ledger);
      await a.start(() => {});
      await b.start(() => {});
      const now = Date.now();
      const taken = await Promise.all(
        Array.from({ length: 10 }, (_, i) => a.hold(`req_a${i}`, 'acct_restart', 1_000, now, now + 60_000)),
      );
      assert.ok(taken.every(Boolean));
      assert.equal(await b.hold('req_b0', 'acct_restart', 1_000, now, now + 60_000), false);

      await own.restart();
      // B asks again at once; while Redis is coming back it may be told 503, never given the credit.
      let answer: boolean | undefined;
      const deadline = Date.now() + 15_000;
      while (answer === undefined && Date.now() < deadline) {
        try {
          answer = await b.hold('req_b1', 'acct_restart', 1_000, Date.now(), Date.now() + 60_000);
        } catch (error) {
          assert.ok(error instanceof GatewayError && error.code === 'service_unavailable', String(error));
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
      assert.equal(answer, false, 'the restarted Redis still counts the running holds');
      const probe = new Redis(own.port, '127.0.0.1');
      assert.equal(Number(await probe.hget('tg:hold:{acct_restart}:bal', 'held')), 10_000);
      assert.equal(await probe.hlen('tg:hold:{acct_restart}:holds'), 10);
      probe.disconnect();
      await a.close();
      await b.close();
    } finally {
      await first.bus.close();
      await second.bus.close();
      await opened.cleanup();
      await own.stop();
    }
  });

  it('unreachable: chat requests get 503 with Retry-After, then are served again by themselves', async () => {
    const own = await startRedisServer();
    const opened = await postgres!.open();
    const backends = connectRedis(own.url, 'local', silent);
    await backends.ready(2_000);
    const ledgerStore = createStore(opened.reopen());
    const server = await startTestServer({
      backend: opened,
      ownConnection: true,
      yaml: { simulator: { chunk_interval_ms: 0 } },
      extra: { limiter: backends.limiter, bus: backends.bus, holds: backends.holds(ledgerStore.ledger) },
    });
    try {
      const { key } = await server.register();
      const ask = () =>
        server.call('POST', '/v1/chat/completions', {
          key,
          body: { model: 'model-b', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
        });
      assert.equal((await ask()).status, 200);
      await own.kill();
      const refused = await ask();
      assert.equal(refused.status, 503);
      assert.equal(refused.body.error.code, 'service_unavailable');
      assert.equal(refused.headers.get('retry-after'), '1');
      await own.restart();
      let status = 0;
      const deadline = Date.now() + 15_000;
      while (status !== 200 && Date.now() < deadline) {
        status = (await ask()).status;
        if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal(status, 200);
    } finally {
      await server.close();
      await ledgerStore.close();
      await opened.cleanup();
      await own.stop();
    }
  });
});
