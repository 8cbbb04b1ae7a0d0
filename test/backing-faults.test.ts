import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { pino } from 'pino';
import { connectRedis } from '../src/composition/connect-redis.ts';
import type { Db } from '../src/store/db.ts';
import { createPostgresDb } from '../src/store/postgres/postgres-db.ts';
import { BACKENDS, type OpenedBackend, POSTGRES_URL } from './helpers/backends.ts';
import { type RunningGateway, startGatewayProcess } from './helpers/process.ts';
import { REDIS_URL, redisUnavailable, testPrefix } from './helpers/redis.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.ts';

const postgres = BACKENDS.find((backend) => backend.name === 'postgres');
const postgresSkip = postgres ? await postgres.unavailable() : 'PostgreSQL is not in TOLLGATE_TEST_BACKENDS';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Answer {
  status: number;
  requestId: string | null;
  retryAfter: string | null;
  code: string | undefined;
}

/** A chat request, streamed or not, read to its end. */
async function chat(server: TestServer, key: string, stream: boolean): Promise<Answer> {
  const response = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'model-b',
      max_tokens: 8,
      stream,
      messages: [{ role: 'user', content: 'fault test' }],
    }),
  });
  const text = await response.text();
  let code: string | undefined;
  if (response.status !== 200) code = (JSON.parse(text) as { error: { code: string } }).error.code;
  else if (stream) assert.match(text, /data: \[DONE\]\n\n$/, 'a 200 stream ends whole');
  return {
    status: response.status,
    requestId: response.headers.get('x-request-id'),
    retryAfter: response.headers.get('retry-after'),
    code,
  };
}

describe('PostgreSQL going away under traffic', { skip: postgresSkip ?? false }, () => {
  const applicationName = `tg_fault_${process.pid}`;
  let opened: OpenedBackend;
  let proxy: TcpProxy;
  let db: Db;
  let server: TestServer;
  let admin: pg.Client;
  const transitions: boolean[] = [];

  before(async () => {
    opened = await postgres!.open();
    proxy = await startTcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
    const url = new URL(POSTGRES_URL);
    url.host = `127.0.0.1:${proxy.port}`;
    db = createPostgresDb({
      connectionString: url.toString(),
      schema: opened.schema!,
      applicationName,
      connectionTimeoutMs: 500,
    });
    server = await startTestServer({
      backend: { ...opened, db },
      yaml: { simulator: { chunk_interval_ms: 5 } },
    });
    // The store tells the services of each outage and recovery (they log one line each); count them.
    const told = db.onAvailability;
    db.onAvailability = (available, error) => {
      transitions.push(available);
      told?.(available, error);
    };
    admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
  });
  after(async () => {
    await server?.close();
    await db?.close();
    await proxy?.close();
    await admin?.end();
    await opened?.cleanup();
  });

  /** A registered account with credit; resolves to its key, id and credit in µUSD. */
  async function fundedAccount(): Promise<{ key: string; accountId: string }> {
    const { key, accountId } = await server.register();
    const grant = await server.call('POST', `/api/admin/accounts/${accountId}/credits`, {
      key: ADMIN_KEY,
      body: { amount_usd: 5 },
    });
    assert.ok(grant.status < 300, JSON.stringify(grant.body));
    const plan = await server.call('PUT', `/api/admin/accounts/${accountId}/plan`, {
      key: ADMIN_KEY,
      body: { plan: 'enterprise' },
    });
    assert.ok(plan.status < 300, JSON.stringify(plan.body));
    return { key, accountId };
  }

  /** Every 200 is billed exactly once, nothing else is, and no hold is left. */
  async function assertBilledExactly(
    accountId: string,
    answers: Answer[],
    creditBefore: number,
  ): Promise<void> {
    await server.services.settlements.flush();
    const ok = answers.filter((answer) => answer.status === 200).map((answer) => answer.requestId!);
    const records = await opened.db.all<{ request_id: string; status: string; cost_micros: number }>(
      'SELECT request_id, status, cost_micros FROM usage_records WHERE account_id = $1',
      [accountId],
    );
    const billedOk = records.filter((record) => record.status === 'ok').map((record) => record.request_id);
    assert.deepEqual(billedOk.sort(), [...ok].sort(), 'each 200 has exactly one usage record');
    const holds = await opened.db.get<{ n: number }>(
      'SELECT COUNT(*) AS n FROM holds WHERE account_id = $1',
      [accountId],
    );
    assert.equal(Number(holds?.n), 0, 'no hold is left');
    const balance = await opened.db.get<{ credit: number }>(
      'SELECT COALESCE(SUM(remaining_micros), 0) AS credit FROM credit_grants WHERE account_id = $1',
      [accountId],
    );
    const charged = records.reduce((sum, record) => sum + Number(record.cost_micros), 0);
    assert.ok(charged > 0);
    assert.equal(creditBefore - Number(balance?.credit), charged, 'the ledger charged what the records say');
  }

  const creditOf = async (accountId: string): Promise<number> =>
    Number(
      (
        await opened.db.get<{ credit: number }>(
          'SELECT COALESCE(SUM(remaining_micros), 0) AS credit FROM credit_grants WHERE account_id = $1',
          [accountId],
        )
      )?.credit,
    );

  it('connections terminated under load: the process lives, no 500, every 200 billed once', async () => {
    const { key, accountId } = await fundedAccount();
    const creditBefore = await creditOf(accountId);
    const answers: Promise<Answer>[] = [];
    for (let round = 0; round < 6; round++) {
      for (let i = 0; i < 6; i++) answers.push(chat(server, key, i % 2 === 0));
      await sleep(15);
      await admin.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
        [applicationName],
      );
    }
    const settled = await Promise.all(answers);
    for (const answer of settled) {
      assert.ok([200, 503].includes(answer.status), `status ${answer.status} (${answer.code})`);
      if (answer.status === 503) {
        assert.equal(answer.code, 'service_unavailable');
        assert.ok(Number(answer.retryAfter) >= 1, 'a 503 carries Retry-After');
      }
    }
    assert.ok(settled.some((answer) => answer.status === 200));
    const next = await chat(server, key, false);
    assert.equal(next.status, 200, 'the next request succeeds');
    await assertBilledExactly(accountId, [...settled, next], creditBefore);
  });

  it('an outage of a second and a half: 503 with Retry-After, one transition each way, settlements wait', async () => {
    const { key, accountId } = await fundedAccount();
    const creditBefore = await creditOf(accountId);
    const warm = await chat(server, key, false); // caches the key: during the outage, the hold is what fails
    const other = await server.register(); // its key is not cached: during the outage, authentication fails
    assert.equal(warm.status, 200);
    transitions.length = 0;

    // Streams in flight when the database goes: they finish (the upstream needs no database) and are billed later.
    const inFlight = Array.from({ length: 4 }, () => chat(server, key, true));
    await sleep(5);
    await proxy.cut();
    const during: Answer[] = [];
    for (let i = 0; i < 6; i++) during.push(await chat(server, key, i % 2 === 0));
    during.push(await chat(server, other.key, false));
    const finished = await Promise.all(inFlight);
    assert.ok(server.services.settlements.pending > 0 || finished.every((a) => a.status !== 200));
    await sleep(1_000);
    await proxy.restore();

    for (const answer of during) {
      assert.equal(answer.status, 503);
      assert.equal(answer.code, 'service_unavailable');
      assert.ok(Number(answer.retryAfter) >= 1);
    }
    // Recovers by itself: the next request after the database returns succeeds.
    let next: Answer | undefined;
    for (let attempt = 0; attempt < 50 && next?.status !== 200; attempt++) {
      next = await chat(server, key, false);
      if (next.status !== 200) await sleep(100);
    }
    assert.equal(next?.status, 200, 'the next request succeeds');
    assert.deepEqual(transitions, [false, true], 'one outage, told once, and one recovery');
    await assertBilledExactly(accountId, [warm, ...finished, ...during, next], creditBefore);
  });
});

describe('Redis going away with the deny policy', { skip: (await redisUnavailable()) ?? false }, () => {
  let opened: OpenedBackend;
  let proxy: TcpProxy;
  let server: TestServer;
  const redisPrefix = testPrefix();
  let closeRedis: () => Promise<void>;
  const logLines: string[] = [];

  before(async () => {
    opened = await BACKENDS.find((backend) => backend.name === 'sqlite')!.open();
    proxy = await startTcpProxy(Number(new URL(REDIS_URL).port || 6379), new URL(REDIS_URL).hostname);
    const logger = pino({ level: 'info' }, { write: (line: string) => void logLines.push(line) });
    const redis = connectRedis(`redis://127.0.0.1:${proxy.port}`, 'deny', logger, redisPrefix.prefix);
    await redis.ready(2_000);
    closeRedis = () => redis.bus.close();
    server = await startTestServer({ backend: opened, extra: { limiter: redis.limiter, bus: redis.bus } });
  });
  after(async () => {
    await server?.close();
    await closeRedis?.();
    await proxy?.close();
    await opened?.cleanup();
    await redisPrefix.cleanup();
  });

  it('answers 503 with Retry-After while Redis is away, and recovers by itself', async () => {
    const { key } = await server.register();
    assert.equal((await chat(server, key, false)).status, 200);
    await proxy.cut();
    await sleep(50);
    for (let i = 0; i < 5; i++) {
      const during = await chat(server, key, false);
      assert.equal(during.status, 503);
      assert.equal(during.code, 'service_unavailable');
      assert.ok(Number(during.retryAfter) >= 1);
      await sleep(100);
    }
    await proxy.restore();
    let next: Answer | undefined;
    for (let attempt = 0; attempt < 60 && next?.status !== 200; attempt++) {
      await sleep(100);
      next = await chat(server, key, false);
    }
    assert.equal(next?.status, 200, 'limits are shared again and requests pass');
    const count = (text: string) => logLines.filter((line) => line.includes(text)).length;
    assert.equal(count('Redis is unreachable'), 1, 'one line for the outage, not one per request or retry');
    assert.equal(count('Redis answers again'), 1, 'and one for the recovery');
  });
});

describe(
  'a gateway process (as npm start runs it) while PostgreSQL goes away',
  { skip: postgresSkip ?? false },
  () => {
    const applicationName = `tg_fault_proc_${process.pid}`;
    const adminKey = 'tg-admin-backing-faults-0123456789ab';
    let opened: OpenedBackend;
    let proxy: TcpProxy;
    let gateway: RunningGateway;
    let dir: string;
    let admin: pg.Client;

    before(async () => {
      opened = await postgres!.open();
      proxy = await startTcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
      const url = new URL(POSTGRES_URL);
      url.host = `127.0.0.1:${proxy.port}`;
      url.searchParams.set('options', `-c search_path=${opened.schema!}`);
      url.searchParams.set('application_name', applicationName);
      dir = mkdtempSync(join(tmpdir(), 'tollgate-backing-'));
      writeFileSync(join(dir, 'tollgate.yaml'), 'simulator:\n  chunk_interval_ms: 5\n');
      gateway = await startGatewayProcess({
        DATABASE_URL: url.toString(),
        TOLLGATE_ADMIN_KEY: adminKey,
        TOLLGATE_CONFIG: join(dir, 'tollgate.yaml'),
        LOG_LEVEL: 'info',
      });
      admin = new pg.Client({ connectionString: POSTGRES_URL });
      await admin.connect();
    });
    after(async () => {
      gateway?.child.kill('SIGKILL');
      if (gateway) await gateway.exited;
      await proxy?.close();
      await admin?.end();
      await opened?.cleanup();
      rmSync(dir, { recursive: true, force: true });
    });

    const call = async (path: string, key: string, body: unknown): Promise<any> =>
      (
        await fetch(`${gateway.url}${path}`, {
          method: path.endsWith('/plan') ? 'PUT' : 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      ).json();

    const ask = async (key: string, stream: boolean): Promise<Answer> => {
      const response = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'model-b',
          max_tokens: 8,
          stream,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      const text = await response.text();
      return {
        status: response.status,
        requestId: response.headers.get('x-request-id'),
        retryAfter: response.headers.get('retry-after'),
        code:
          response.status === 200 ? undefined : (JSON.parse(text) as { error: { code: string } }).error.code,
      };
    };

    it('lives through terminated connections and a cut, logs each outage once, bills each 200 once', async () => {
      const registered = await call('/api/auth/register', '', {
        email: 'backing@example.com',
        password: 'correct horse battery',
      });
      const key: string = registered.api_key.key;
      const accountId: string = registered.account.id;
      await call(`/api/admin/accounts/${accountId}/plan`, adminKey, { plan: 'enterprise' });
      await call(`/api/admin/accounts/${accountId}/credits`, adminKey, { amount_usd: 5 });
      const answers: Promise<Answer>[] = [ask(key, false)];
      await answers[0];

      for (let round = 0; round < 4; round++) {
        for (let i = 0; i < 5; i++) answers.push(ask(key, i % 2 === 0));
        await sleep(15);
        await admin.query(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
          [applicationName],
        );
      }
      for (let i = 0; i < 4; i++) answers.push(ask(key, true));
      await sleep(5);
      await proxy.cut();
      const during: Answer[] = [];
      for (let i = 0; i < 8; i++) during.push(await ask(key, i % 2 === 0));
      await sleep(1_000);
      await proxy.restore();
      let next: Answer | undefined;
      for (let attempt = 0; attempt < 50 && next?.status !== 200; attempt++) {
        next = await ask(key, false);
        if (next.status !== 200) await sleep(100);
      }
      assert.equal(next?.status, 200, 'the instance recovers by itself');
      const all = [...(await Promise.all(answers)), ...during, next];
      for (const answer of during) {
        assert.equal(answer.status, 503, 'requests during the cut answer 503');
        assert.ok(Number(answer.retryAfter) >= 1, 'with Retry-After');
      }
      for (const answer of all) assert.ok([200, 503].includes(answer.status), `status ${answer.status}`);
      assert.equal(gateway.child.exitCode, null, 'the process is alive');

      // Every 200 is billed once, once the settlements that waited have committed.
      const ok = all.filter((answer) => answer.status === 200).map((answer) => answer.requestId!);
      let billed: string[] = [];
      for (let attempt = 0; attempt < 50; attempt++) {
        const records = await opened.db.all<{ request_id: string }>(
          "SELECT request_id FROM usage_records WHERE account_id = $1 AND status = 'ok'",
          [accountId],
        );
        billed = records.map((record) => record.request_id);
        const holds = await opened.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM holds');
        if (billed.length >= ok.length && Number(holds?.n) === 0) break;
        await sleep(100);
      }
      assert.deepEqual(billed.sort(), ok.sort(), 'each 200 has exactly one usage record');
      const holds = await opened.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM holds');
      assert.equal(Number(holds?.n), 0, 'no hold is left');

      const lines = gateway.output().split('\n');
      const down = lines.filter((line) => line.includes('the database is unreachable')).length;
      const up = lines.filter((line) => line.includes('the database answers again')).length;
      assert.ok(down >= 1, 'the outage is logged');
      assert.ok(up >= down - 1 && up <= down, 'and so is each recovery');
      assert.ok(down <= 6, `one line per outage, not per request (${down} lines for 5 outages)`);
      assert.ok(!lines.some((line) => line.includes('request failed')), 'no request is logged as failed');
    });
  },
);
