import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import pg from 'pg';
import { BACKENDS, POSTGRES_URL } from './helpers/backends.ts';
import { type RunningGateway, startGatewayProcess } from './helpers/process.ts';
import { redisServerMissing, startRedisServer, type OwnRedis } from './helpers/redis-server.ts';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.ts';

/**
 * Serving through a database outage: three gateway processes share PostgreSQL (behind a TCP proxy the test
 * cuts for 10 s) and a Redis of the test's own. Funded keys the instances already know are served 200 for the
 * whole cut; afterwards the spooled settlements commit and the money is exact to the µUSD, with no hold left.
 */
const ADMIN = 'tg-admin-outage-test-0123456789abcdef';
const INSTANCES = 3;
const ACCOUNTS = 3;
/** USD 20 each: thousands of these requests' cost, but only ~270 of their worst cases (no max_tokens). */
const CREDIT_MICROS = 20_000_000;
const CUT_MS = 10_000;
const postgres = BACKENDS.find((b) => b.name === 'postgres');
const skip =
  (await redisServerMissing()) ??
  (postgres ? await postgres.unavailable() : 'PostgreSQL backend excluded by TOLLGATE_TEST_BACKENDS');

interface Outcome {
  status: number | 'failed';
  at: number;
  requestId: string | null;
  costMicros: number | null;
  account: string;
  instance: number;
  detail?: string;
}

describe('a database outage under load', { skip: skip ?? false }, () => {
  const database = `tg_outage_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  let dir: string;
  let redis: OwnRedis;
  let proxy: TcpProxy;
  let owner: pg.Client;
  let admin: pg.Client;
  const gateways: RunningGateway[] = [];

  before(async () => {
    owner = new pg.Client({ connectionString: POSTGRES_URL });
    await owner.connect();
    await owner.query(`CREATE DATABASE ${database}`);
    const direct = new URL(POSTGRES_URL);
    direct.pathname = `/${database}`;
    admin = new pg.Client({ connectionString: direct.toString(), application_name: 'outage-test' });
    await admin.connect();
    const target = new URL(POSTGRES_URL);
    proxy = await startTcpProxy(Number(target.port || 5432), target.hostname);
    redis = await startRedisServer();
    dir = mkdtempSync(join(tmpdir(), 'tollgate-outage-'));
    const config = join(dir, 'tollgate.yaml');
    writeFileSync(config, 'simulator:\n  chunk_interval_ms: 2\n');
    const url = new URL(POSTGRES_URL);
    url.port = String(proxy.port);
    url.pathname = `/${database}`;
    const env = {
      DATABASE_URL: url.toString(),
      REDIS_URL: redis.url,
      TOLLGATE_ADMIN_KEY: ADMIN,
      TOLLGATE_CONFIG: config,
      LOG_LEVEL: 'error',
    };
    gateways.push(await startGatewayProcess(env));
    gateways.push(
      ...(await Promise.all(Array.from({ length: INSTANCES - 1 }, () => startGatewayProcess(env)))),
    );
  });
  after(async () => {
    for (const gateway of gateways) gateway.child.kill('SIGKILL');
    await redis?.stop();
    await proxy?.close();
    await admin?.end();
    await owner?.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
      [database],
    );
    await owner?.query(`DROP DATABASE IF EXISTS ${database}`);
    await owner?.end();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const post = (url: string, path: string, key: string | undefined, body: unknown, method = 'POST') =>
    fetch(`${url}${path}`, {
      method,
      headers: {
        'content-type': 'application/json',
        ...(key ? { authorization: `Bearer ${key}` } : {}),
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
  /** A funded Enterprise account: its grants replaced by one of CREDIT_MICROS; its key. */
  const fundedAccount = async (url: string, email: string) => {
    const registered = (await (
      await post(url, '/api/auth/register', undefined, { email, password: 'correct horse battery' })
    ).json()) as { account: { id: string }; api_key: { key: string } };
    const accountId = registered.account.id;
    const planned = await post(
      url,
      `/api/admin/accounts/${accountId}/plan`,
      ADMIN,
      { plan: 'enterprise' },
      'PUT',
    );
    assert.equal(planned.status, 200);
    await admin.query('DELETE FROM credit_grants WHERE account_id = $1', [accountId]);
    await admin.query(
      `INSERT INTO credit_grants (id, account_id, kind, amount_micros, remaining_micros, expires_at, created_at, source)
       VALUES ($1, $2, 'admin', $3, $3, $4, $5, 'outage test')`,
      [`grant_${accountId}`, accountId, CREDIT_MICROS, Date.now() + 86_400_000, Date.now()],
    );
    return { accountId, key: registered.api_key.key };
  };
  // No max_tokens: each request holds its worst case (the model's default maximum) until it finishes.
  const BODY = { model: 'model-a', messages: [{ role: 'user', content: 'outage, briefly' }] };
  const chat = async (instance: number, account: { accountId: string; key: string }): Promise<Outcome> => {
    const at = Date.now();
    const base = { at, account: account.accountId, instance };
    try {
      const response = await post(gateways[instance]!.url, '/v1/chat/completions', account.key, BODY);
      const text = await response.text();
      const cost = response.headers.get('x-tollgate-cost-usd');
      return {
        ...base,
        status: response.status,
        requestId: response.headers.get('x-request-id'),
        costMicros: cost === null ? null : Math.round(Number(cost) * 1e6),
        ...(response.status === 200 ? {} : { detail: `${response.headers.get('retry-after')} ${text}` }),
      };
    } catch (error) {
      return { ...base, status: 'failed', requestId: null, costMicros: null, detail: String(error) };
    }
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('serves funded keys the instances know for the whole cut, and the money is exact afterwards', async () => {
    const accounts = [];
    for (let i = 0; i < ACCOUNTS; i++)
      accounts.push(await fundedAccount(gateways[0]!.url, `funded${i}@example.com`));
    // Every instance knows every key and account before the cut.
    for (let instance = 0; instance < INSTANCES; instance++)
      for (const account of accounts) assert.equal((await chat(instance, account)).status, 200);

    const outcomes: Outcome[] = [];
    let running = true;
    const worker = async (account: { accountId: string; key: string }, offset: number): Promise<void> => {
      for (let n = offset; running; n++) {
        outcomes.push(await chat(n % INSTANCES, account));
        await sleep(10);
      }
    };
    const workers = accounts.flatMap((account) => [worker(account, 0), worker(account, 1)]);
    let cutAt = 0;
    let restoredAt = 0;
    try {
      await sleep(1_000);
      cutAt = Date.now();
      await proxy.cut();
      await sleep(CUT_MS / 2);
      // Liveness says the database is down; readiness stays: the instances still serve what they know.
      for (const gateway of gateways) {
        assert.equal((await fetch(`${gateway.url}/health`)).status, 503);
        assert.equal((await fetch(`${gateway.url}/health/ready`)).status, 200);
      }
      await sleep(CUT_MS - (Date.now() - cutAt));
      await proxy.restore();
      restoredAt = Date.now();
      await sleep(1_000);
    } finally {
      running = false;
      await Promise.all(workers);
    }

    const inCut = outcomes.filter((o) => o.at >= cutAt && o.at < restoredAt);
    const refused = inCut.filter((o) => o.status !== 200);
    const perInstance = [0, 1, 2].map(
      (i) => inCut.filter((o) => o.instance === i && o.status === 200).length,
    );
    console.log(
      `outage: ${inCut.length} requests during the ${CUT_MS} ms cut, ${refused.length} not 200; 200s per instance ${perInstance.join('/')}`,
    );
    assert.ok(inCut.length >= 30, `load ran through the cut (${inCut.length} requests)`);
    assert.deepEqual(
      refused.slice(0, 5).map((o) => ({ status: o.status, afterCutMs: o.at - cutAt, detail: o.detail })),
      [],
      `every funded key is served for the whole cut (${refused.length} of ${inCut.length} were not)`,
    );

    // The waiting settlements commit once the database is back, and every hold leaves Redis.
    const r = new Redis(redis.port, '127.0.0.1');
    const answered = outcomes.filter((o) => o.status === 200);
    const holdsLeft = async (): Promise<number> => {
      let total = 0;
      for (const key of await r.keys('tg:hold:{*}:holds')) total += await r.hlen(key);
      return total;
    };
    const recorded = async (): Promise<number> =>
      Number((await admin.query<{ n: string }>('SELECT COUNT(*) AS n FROM usage_records')).rows[0]!.n);
    const deadline = Date.now() + 30_000;
    while (((await holdsLeft()) > 0 || (await recorded()) < answered.length + 9) && Date.now() < deadline)
      await sleep(250);
    assert.equal(await holdsLeft(), 0, 'no hold is left in Redis');
    r.disconnect();

    // Every 200 is billed once at the cost it announced, and each account's credit is what it was less its charges.
    const records = await admin.query<{ request_id: string; cost_micros: string }>(
      'SELECT request_id, cost_micros FROM usage_records WHERE request_id = ANY($1)',
      [answered.map((o) => o.requestId)],
    );
    const billed = new Map(records.rows.map((row) => [row.request_id, Number(row.cost_micros)]));
    assert.deepEqual(
      answered.filter((o) => billed.get(o.requestId!) !== o.costMicros).slice(0, 5),
      [],
      'every 200 billed once at its announced cost',
    );
    for (const { accountId } of accounts) {
      const usage = await admin.query<{ charged: string | null; uncollected: string | null }>(
        `SELECT SUM(cost_micros - uncollected_micros) AS charged, SUM(uncollected_micros) AS uncollected
         FROM usage_records WHERE account_id = $1`,
        [accountId],
      );
      const credit = await admin.query<{ s: string }>(
        'SELECT SUM(remaining_micros) AS s FROM credit_grants WHERE account_id = $1',
        [accountId],
      );
      const held = await admin.query<{ n: string }>('SELECT COUNT(*) AS n FROM holds WHERE account_id = $1', [
        accountId,
      ]);
      assert.equal(Number(usage.rows[0]!.uncollected ?? 0), 0, 'nothing written off');
      assert.equal(
        Number(credit.rows[0]!.s),
        CREDIT_MICROS - Number(usage.rows[0]!.charged ?? 0),
        'credit − charges = remaining, to the µUSD',
      );
      assert.equal(Number(held.rows[0]!.n), 0);
    }
  });
});
