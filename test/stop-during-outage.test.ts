import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import pg from 'pg';
import { POSTGRES_URL, BACKENDS } from './helpers/backends.ts';
import { sampleIdle } from './helpers/proc-stat.ts';
import { type RunningGateway, startGatewayProcess } from './helpers/process.ts';
import { redisServerMissing, startRedisServer, type OwnRedis } from './helpers/redis-server.ts';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.ts';

/**
 * The gateway process as `npm start` runs it, on PostgreSQL and a Redis of the test's own, each behind a TCP
 * proxy the test cuts. Whatever backing service is away: an idle instance does not spin (under 5 % of a core
 * over ~15 s, RSS flat), SIGTERM ends it with status 0 within the documented 30 s, and a clean stop leaves
 * neither job leases nor its instance lease behind.
 */
const ADMIN = 'tg-admin-stop-outage-0123456789abcdef';
const postgres = BACKENDS.find((b) => b.name === 'postgres');
const skip =
  (await redisServerMissing()) ??
  (postgres ? await postgres.unavailable() : 'PostgreSQL backend excluded by TOLLGATE_TEST_BACKENDS');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A time limit for a race: it does not keep the test process alive once the race is decided. */
const deadline = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());
/** The window over which idle CPU and memory are measured during an outage. */
const IDLE_WINDOW_MS = 15_000;

describe('stopping a gateway process while a backing service is away', { skip: skip ?? false }, () => {
  const database = `tg_stop_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  let dir: string;
  let redis: OwnRedis;
  let redisProxy: TcpProxy;
  let pgProxy: TcpProxy;
  let owner: pg.Client;
  let admin: pg.Client;
  let env: Record<string, string>;
  const started: RunningGateway[] = [];

  before(async () => {
    owner = new pg.Client({ connectionString: POSTGRES_URL });
    await owner.connect();
    await owner.query(`CREATE DATABASE ${database}`);
    const direct = new URL(POSTGRES_URL);
    direct.pathname = `/${database}`;
    admin = new pg.Client({ connectionString: direct.toString() });
    await admin.connect();
    redis = await startRedisServer();
    redisProxy = await startTcpProxy(redis.port);
    const target = new URL(POSTGRES_URL);
    pgProxy = await startTcpProxy(Number(target.port || 5432), target.hostname);
    const proxied = new URL(POSTGRES_URL);
    proxied.host = `127.0.0.1:${pgProxy.port}`;
    proxied.pathname = `/${database}`;
    dir = mkdtempSync(join(tmpdir(), 'tollgate-stop-'));
    writeFileSync(join(dir, 'tollgate.yaml'), 'simulator:\n  chunk_interval_ms: 100\n');
    env = {
      DATABASE_URL: proxied.toString(),
      REDIS_URL: `redis://127.0.0.1:${redisProxy.port}`,
      TOLLGATE_ADMIN_KEY: ADMIN,
      TOLLGATE_CONFIG: join(dir, 'tollgate.yaml'),
      LOG_LEVEL: 'info',
    };
  });
  after(async () => {
    for (const gateway of started) {
      if (gateway.child.exitCode === null && gateway.child.signalCode === null) {
        gateway.child.kill('SIGKILL');
        await gateway.exited;
      }
    }
    await redisProxy?.close();
    await pgProxy?.close();
    await redis?.stop();
    await admin?.end();
    await owner?.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await owner?.end();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const start = async (): Promise<RunningGateway> => {
    const gateway = await startGatewayProcess(env);
    started.push(gateway);
    return gateway;
  };

  const call = async (gateway: RunningGateway, method: string, path: string, key: string, body?: unknown) => {
    const response = await fetch(`${gateway.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as any };
  };

  /** A funded Enterprise key on the gateway. */
  const fundedKey = async (gateway: RunningGateway): Promise<string> => {
    const email = `stop${Math.random().toString(36).slice(2, 10)}@example.com`;
    const registered = await call(gateway, 'POST', '/api/auth/register', '', {
      email,
      password: 'correct horse battery',
    });
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    const accountId: string = registered.body.account.id;
    await call(gateway, 'PUT', `/api/admin/accounts/${accountId}/plan`, ADMIN, { plan: 'enterprise' });
    await call(gateway, 'POST', `/api/admin/accounts/${accountId}/credits`, ADMIN, { amount_usd: 5 });
    return registered.body.api_key.key as string;
  };

  /** A streamed chat request of ~2 s (20 chunks, 100 ms apart), read to its end; resolves to its status. */
  const stream = async (
    gateway: RunningGateway,
    key: string,
    started: () => void = () => {},
  ): Promise<number> => {
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'model-b',
        max_tokens: 20,
        stream: true,
        messages: [{ role: 'user', content: 'a slow stream' }],
      }),
    });
    started();
    await response.text();
    return response.status;
  };

  /** Streams that have begun (their headers are in): each resolves to its status once read to its end. */
  const streamsUnderWay = async (gateway: RunningGateway, key: string, count: number) => {
    const begun: Promise<void>[] = [];
    const done = Array.from({ length: count }, () => {
      let started!: () => void;
      begun.push(new Promise<void>((resolve) => (started = resolve)));
      return stream(gateway, key, started);
    });
    await Promise.all(begun);
    await sleep(200);
    return done;
  };

  /** SIGTERM; resolves to the exit status and how long the stop took (Infinity past `limitMs`). */
  const terminate = async (
    gateway: RunningGateway,
    limitMs = 40_000,
  ): Promise<{ code: number | string; tookMs: number }> => {
    const sent = Date.now();
    gateway.child.kill('SIGTERM');
    const code = await Promise.race([gateway.exited, deadline(limitMs).then(() => 'still running' as const)]);
    return { code, tookMs: Date.now() - sent };
  };

  const assertIdle = async (gateway: RunningGateway, what: string): Promise<string> => {
    const { coreShare, rssMiB } = await sampleIdle(gateway.child.pid!, IDLE_WINDOW_MS);
    const summary = `${(coreShare * 100).toFixed(1)} % of a core, RSS ${rssMiB.map((m) => m.toFixed(0)).join(' ')} MiB`;
    assert.ok(coreShare < 0.05, `${what}: an idle instance must not spin (${summary})`);
    const firstHalf = Math.max(...rssMiB.slice(0, Math.ceil(rssMiB.length / 2)));
    const last = rssMiB.at(-1)!;
    assert.ok(last - firstHalf < 16, `${what}: memory stays flat (${summary})`);
    return summary;
  };

  it('Redis cut with settlements waiting for it: idle and flat, then SIGTERM exits 0 within 30 s', async (t) => {
    const gateway = await start();
    const key = await fundedKey(gateway);
    assert.equal(await stream(gateway, key), 200);
    // Streams in flight when Redis goes: they finish, their settlements commit in PostgreSQL, and the release
    // of their holds in Redis has to wait for Redis.
    const streams = await streamsUnderWay(gateway, key, 3);
    await redisProxy.cut();
    assert.deepEqual(await Promise.all(streams), [200, 200, 200]);
    await sleep(2_000);
    t.diagnostic(`Redis away: ${await assertIdle(gateway, 'Redis away')}`);
    const stop = await terminate(gateway);
    await redisProxy.restore();
    assert.equal(stop.code, 0, `exit status (after ${stop.tookMs} ms):\n${gateway.output().slice(-3000)}`);
    assert.ok(stop.tookMs < 30_000, `the stop took ${stop.tookMs} ms`);
    t.diagnostic(`the stop took ${stop.tookMs} ms`);
  });

  it('PostgreSQL cut: idle and flat, then SIGTERM exits 0 within 30 s', async (t) => {
    const gateway = await start();
    const key = await fundedKey(gateway);
    assert.equal(await stream(gateway, key), 200);
    const streams = await streamsUnderWay(gateway, key, 2);
    await pgProxy.cut();
    await Promise.all(streams);
    await sleep(2_000);
    t.diagnostic(`PostgreSQL away: ${await assertIdle(gateway, 'PostgreSQL away')}`);
    const stop = await terminate(gateway);
    await pgProxy.restore();
    assert.equal(stop.code, 0, `exit status (after ${stop.tookMs} ms):\n${gateway.output().slice(-3000)}`);
    assert.ok(stop.tookMs < 30_000, `the stop took ${stop.tookMs} ms`);
    t.diagnostic(`the stop took ${stop.tookMs} ms`);
  });

  it('a clean stop releases its job leases and its instance lease', async () => {
    // The instance stopped during the database outage above could not give its leases back.
    await admin.query('DELETE FROM leases').catch(() => undefined);
    await admin.query('DELETE FROM instance_leases').catch(() => undefined);
    const gateway = await start();
    const key = await fundedKey(gateway);
    assert.equal(await stream(gateway, key), 200);
    // The scheduler takes its jobs' leases as soon as it starts; give every job its first round.
    let held = 0;
    for (let i = 0; i < 40 && held < 3; i++) {
      await sleep(100);
      const rows = await admin.query('SELECT COUNT(*)::int AS n FROM leases WHERE until_at > $1', [
        Date.now(),
      ]);
      held = rows.rows[0].n as number;
    }
    assert.ok(held >= 3, `the instance took its job leases (${held})`);
    const stop = await terminate(gateway);
    assert.equal(stop.code, 0, gateway.output().slice(-3000));
    const left = await admin.query('SELECT name, owner FROM leases WHERE until_at > $1', [Date.now()]);
    assert.deepEqual(left.rows, [], 'no job lease outlives a clean stop');
    const instances = await admin.query('SELECT instance_id FROM instance_leases');
    assert.deepEqual(instances.rows, [], 'nor a database instance lease');
    const client = new Redis(redis.url);
    try {
      assert.deepEqual(await client.zrange('tg:hold:instances', '0', '-1'), [], 'nor its Redis lease');
    } finally {
      client.disconnect();
    }
  });
});
