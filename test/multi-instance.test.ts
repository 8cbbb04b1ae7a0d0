import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { Scheduler } from '../src/jobs/scheduler.ts';
import { connectRedis } from '../src/composition/connect-redis.ts';
import { createStore } from '../src/store/store.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { createTestClock } from './helpers/clock.ts';
import { REDIS_URL, redisUnavailable, testPrefix } from './helpers/redis.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.ts';

const silent = pino({ level: 'silent' });
const ask = (server: TestServer, key: string) =>
  server.call('POST', '/v1/chat/completions', {
    key,
    body: { model: 'model-b', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
  });

const sqlite = BACKENDS.find((b) => b.name === 'sqlite')!;
const postgres = BACKENDS.find((b) => b.name === 'postgres');

describe('rate limits on one instance (memory)', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  const time = createTestClock(Date.parse('2026-11-05T09:00:00Z'));
  before(async () => {
    opened = await sqlite.open();
    server = await startTestServer({ backend: opened, clock: time.clock });
  });
  after(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  it('12 concurrent requests on a Free Trial key: exactly 10 succeed and 2 get 429', async () => {
    const { key } = await server.register();
    const responses = await Promise.all(Array.from({ length: 12 }, () => ask(server, key)));
    assert.deepEqual(responses.map((r) => r.status).sort(), [...Array(10).fill(200), 429, 429]);
    const ok = responses.find((r) => r.status === 200)!;
    assert.equal(ok.headers.get('x-ratelimit-limit-requests'), '10');
    assert.equal(ok.headers.get('x-ratelimit-limit-tokens'), '50000');
    assert.ok(ok.headers.get('x-ratelimit-remaining-requests'));
    assert.ok(ok.headers.get('x-ratelimit-reset-tokens'));
    const refused = responses.find((r) => r.status === 429)!;
    assert.equal(refused.body.error.code, 'rate_limit_exceeded');
    assert.equal(refused.body.error.type, 'rate_limit_error');
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60);
    assert.ok(Number(refused.headers.get('retry-after-ms')) > 0);

    time.advance(retryAfter * 1000);
    assert.equal((await ask(server, key)).status, 200, 'a retry after Retry-After succeeds');
  });

  it('the daily cap trips at its token count, with Retry-After to the next UTC midnight', async () => {
    const { key, accountId } = await server.register();
    await server.call('PUT', `/api/admin/accounts/${accountId}/limits`, {
      key: ADMIN_KEY,
      body: { daily_tokens: 60, rpm: null, tpm: null },
    });
    const first = await ask(server, key);
    assert.equal(first.status, 200);
    const used = first.body.usage.total_tokens;
    let spent = used;
    let last = first;
    while (last.status === 200) {
      last = await ask(server, key);
      if (last.status === 200) spent += last.body.usage.total_tokens;
    }
    assert.equal(last.status, 429);
    assert.ok(spent <= 60 && spent + used > 60 - 5, `stopped at ${spent} tokens`);
    const midnight = Math.ceil(time.now / 86_400_000) * 86_400_000;
    assert.equal(Number(last.headers.get('retry-after')), Math.ceil((midnight - time.now) / 1000));
  });

  it('the daily cap survives a restart of the instance', async () => {
    const first = await startTestServer({ backend: opened, clock: time.clock });
    const { key, accountId } = await first.register();
    await first.call('PUT', `/api/admin/accounts/${accountId}/limits`, {
      key: ADMIN_KEY,
      body: { daily_tokens: 60, rpm: null, tpm: null },
    });
    let status = 200;
    while (status === 200) status = (await ask(first, key)).status;
    assert.equal(status, 429);
    await first.close();
    const second = await startTestServer({ backend: opened, clock: time.clock });
    try {
      const after = await ask(second, key);
      assert.equal(after.status, 429, 'a fresh process still counts the day’s tokens');
      assert.match(after.body.error.message, /tokens per day/);
    } finally {
      await second.close();
    }
  });

  it('operator overrides replace the plan’s limits', async () => {
    const { key, accountId } = await server.register();
    const set = await server.call('PUT', `/api/admin/accounts/${accountId}/limits`, {
      key: ADMIN_KEY,
      body: { rpm: 2 },
    });
    assert.equal(set.status, 200);
    assert.equal((await ask(server, key)).status, 200);
    assert.equal((await ask(server, key)).status, 200);
    assert.equal((await ask(server, key)).status, 429);
    assert.equal((await server.call('GET', '/api/account', { key })).body.limits.requests_per_minute, 2);
  });

  it('registration and verification are limited per client address', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 22; i++)
      statuses.push(
        (await server.call('POST', '/api/auth/verify-email', { body: { token: `bogus-${i}` } })).status,
      );
    assert.ok(statuses.slice(0, 10).every((s) => s === 400));
    assert.equal(statuses.at(-1), 429);
  });
});

const sharedSkip =
  (await redisUnavailable()) ??
  (postgres ? await postgres.unavailable() : 'PostgreSQL backend excluded by TOLLGATE_TEST_BACKENDS');

describe('several instances sharing PostgreSQL and Redis', { skip: sharedSkip ?? false }, () => {
  let opened: OpenedBackend;
  let a: TestServer;
  let b: TestServer;
  const redisPrefix = testPrefix();

  before(async () => {
    opened = await postgres!.open();
    const instance = async () => {
      const redis = connectRedis(REDIS_URL, 'local', silent, redisPrefix.prefix);
      await redis.ready(2000);
      return startTestServer({
        backend: opened,
        ownConnection: true,
        extra: { limiter: redis.limiter, bus: redis.bus },
      });
    };
    a = await instance();
    b = await instance();
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await opened?.cleanup();
    await redisPrefix.cleanup();
  });

  it('12 concurrent requests alternated between two instances: exactly 10 succeed and 2 get 429', async () => {
    const { key } = await a.register();
    const responses = await Promise.all(Array.from({ length: 12 }, (_, i) => ask(i % 2 === 0 ? a : b, key)));
    assert.deepEqual(responses.map((r) => r.status).sort(), [...Array(10).fill(200), 429, 429]);
    assert.ok(
      responses.filter((r) => r.status === 429).every((r) => Number(r.headers.get('retry-after')) >= 1),
    );
  });

  it('a key revoked on one instance is refused on the other within a second', async () => {
    const { key } = await a.register();
    const extra = await a.call('POST', '/api/keys', { key, body: { name: 'shared' } });
    assert.equal(
      (await b.call('GET', '/api/account', { key: extra.body.key })).status,
      200,
      'b has it cached',
    );
    assert.equal((await a.call('DELETE', `/api/keys/${extra.body.id}`, { key })).status, 200);
    const started = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - started < 1000) {
      status = (await b.call('GET', '/api/account', { key: extra.body.key })).status;
      if (status === 200) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(status, 403);
  });

  it('an account suspended on one instance is refused on the other within a second', async () => {
    const { key, accountId } = await a.register();
    assert.equal((await ask(b, key)).status, 200);
    await a.call('POST', `/api/admin/accounts/${accountId}/suspend`, { key: ADMIN_KEY });
    const started = Date.now();
    let status = 200;
    while (status !== 403 && Date.now() - started < 1000) {
      status = (await ask(b, key)).status;
      if (status !== 403) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(status, 403);
  });

  it('a background job runs on one instance at a time', async () => {
    const store = createStore(opened.reopen());
    let runs = 0;
    const job = { name: 'exclusive-test-job', everyMs: 60_000, run: async () => void runs++ };
    const schedulers = [
      new Scheduler(a.services.store, Date.now, silent),
      new Scheduler(b.services.store, Date.now, silent),
      new Scheduler(store, Date.now, silent),
    ];
    const results = await Promise.all(schedulers.map((scheduler) => scheduler.runOnce(job)));
    assert.equal(results.filter(Boolean).length, 1);
    assert.equal(runs, 1);
    await store.close();
  });
});

describe('Redis going away mid-traffic', { skip: (await redisUnavailable()) ?? false }, () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let proxy: TcpProxy;
  const redisPrefix = testPrefix();

  before(async () => {
    opened = await sqlite.open();
    proxy = await startTcpProxy(Number(new URL(REDIS_URL).port || 6379), new URL(REDIS_URL).hostname);
    const redis = connectRedis(`redis://127.0.0.1:${proxy.port}`, 'local', silent, redisPrefix.prefix);
    await redis.ready(2000);
    server = await startTestServer({ backend: opened, extra: { limiter: redis.limiter, bus: redis.bus } });
  });
  after(async () => {
    await server?.close();
    await proxy?.close();
    await opened?.cleanup();
    await redisPrefix.cleanup();
  });

  it('keeps serving with per-instance limits, reports degraded, and recovers by itself', async () => {
    const { key } = await server.registerOn('pro');
    assert.equal((await ask(server, key)).status, 200);
    assert.equal((await server.call('GET', '/health', { key: ADMIN_KEY })).body.limiter.ok, true);

    await proxy.cut();
    const during = await Promise.all(Array.from({ length: 5 }, () => ask(server, key)));
    assert.deepEqual(
      during.map((r) => r.status),
      [200, 200, 200, 200, 200],
      'the gateway keeps serving',
    );
    const health = await server.call('GET', '/health', { key: ADMIN_KEY });
    assert.equal(health.status, 200);
    assert.equal(health.body.status, 'degraded');
    assert.equal(health.body.limiter.ok, false);

    await proxy.restore();
    let status = 'degraded';
    for (let i = 0; i < 100 && status !== 'ok'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      status = (await server.call('GET', '/health')).body.status;
    }
    assert.equal(status, 'ok', 'recovered without a restart');
    assert.equal((await ask(server, key)).status, 200);
  });
});
