import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { POSTGRES_URL, BACKENDS, skipOrFail } from './helpers/backends.ts';
import { type RunningGateway, startGatewayProcess } from './helpers/process.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { redisServerMissing, startRedisServer, type OwnRedis } from './helpers/redis-server.ts';
import { buildRelease, releaseMissing, type ReleaseBuild } from './helpers/release-build.ts';

/**
 * A rolling upgrade as it is lived: the previous release (a fixed commit, built beside this tree) and this
 * one, one instance each, on one PostgreSQL database and one Redis, racing for about a minute on one account
 * whose credit covers a few requests at a time (topped up through both). No overspend, every 200 billed once
 * at its announced cost, webhook deliveries from both signed with the secret the account was shown, secrets
 * sealed only once the older instance is gone, and both stop cleanly (exit 0) on SIGTERM.
 */
const PREVIOUS = '495df7b';
const ADMIN = 'tg-admin-mixed-fleet-0123456789abcdef';
const SECRET_KEY = 'mixed-fleet-secret-key-0123456789abcdefghij';
const RACE_MS = 60_000;
const LOOPS_PER_INSTANCE = 4;
const postgres = BACKENDS.find((b) => b.name === 'postgres');

const skip =
  (await redisServerMissing()) ??
  (postgres ? await postgres.unavailable() : 'PostgreSQL backend excluded by TOLLGATE_TEST_BACKENDS') ??
  skipOrFail(releaseMissing(PREVIOUS));

interface Outcome {
  status: number | 'cut';
  requestId: string | null;
  costMicros: number | null;
}

describe(`the previous release (${PREVIOUS}) and this one on one database`, { skip: skip ?? false }, () => {
  const database = `tg_fleet_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  let dir: string;
  let build: ReleaseBuild;
  let redis: OwnRedis;
  let receiver: Receiver;
  let owner: pg.Client;
  let admin: pg.Client;
  let old: RunningGateway;
  let current: RunningGateway;

  before(async () => {
    build = buildRelease(PREVIOUS);
    owner = new pg.Client({ connectionString: POSTGRES_URL });
    await owner.connect();
    await owner.query(`CREATE DATABASE ${database}`);
    const url = new URL(POSTGRES_URL);
    url.pathname = `/${database}`;
    admin = new pg.Client({ connectionString: url.toString(), application_name: 'mixed-fleet-test' });
    await admin.connect();
    redis = await startRedisServer();
    receiver = await startReceiver();
    dir = mkdtempSync(join(tmpdir(), 'tollgate-fleet-'));
    const config = join(dir, 'tollgate.yaml');
    writeFileSync(config, 'simulator:\n  chunk_interval_ms: 2\n');
    const env = {
      DATABASE_URL: url.toString(),
      REDIS_URL: redis.url,
      TOLLGATE_ADMIN_KEY: ADMIN,
      TOLLGATE_CONFIG: config,
      TOLLGATE_WEBHOOK_ALLOW_PRIVATE: 'true',
      LOG_LEVEL: 'warn',
    };
    // The previous release runs first, on the schema it migrates; this one starts beside it (the upgrade).
    // Only this one has a key to seal webhook secrets with: the older one must never meet a sealed secret.
    old = await startGatewayProcess(env, { main: build.main });
    current = await startGatewayProcess({ ...env, TOLLGATE_SECRET_KEY: SECRET_KEY });
  });
  after(async () => {
    old?.child.kill('SIGKILL');
    current?.child.kill('SIGKILL');
    await redis?.stop();
    await receiver?.close();
    await admin?.end();
    await owner?.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [database],
    );
    await owner?.query(`DROP DATABASE IF EXISTS ${database}`);
    await owner?.end();
    if (dir) rmSync(dir, { recursive: true, force: true });
    build?.cleanup();
  });

  const call = async (url: string, method: string, path: string, key: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await response.text();
    return { response, body: text ? JSON.parse(text) : undefined };
  };
  const BODY = { model: 'model-a', max_tokens: 5, messages: [{ role: 'user', content: 'two releases' }] };
  const chat = async (url: string, key: string): Promise<Outcome> => {
    try {
      const { response } = await call(url, 'POST', '/v1/chat/completions', key, BODY);
      const cost = response.headers.get('x-tollgate-cost-usd');
      return {
        status: response.status,
        requestId: response.headers.get('x-request-id'),
        costMicros: cost === null ? null : Math.round(Number(cost) * 1e6),
      };
    } catch {
      return { status: 'cut', requestId: null, costMicros: null };
    }
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const signed = (body: string, secret: string) =>
    `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  const storedSecret = async (accountId: string) =>
    (
      await admin.query<{ secret: string }>('SELECT secret FROM webhook_endpoints WHERE account_id = $1', [
        accountId,
      ])
    ).rows[0]!.secret;

  it('races one account for a minute without overspend, signs from both, seals after, stops cleanly', async () => {
    // Ready once the hold generation's fence (which the older instance may have just set) has passed.
    let ready = await fetch(`${current.url}/health/ready`);
    for (let i = 0; i < 40 && ready.status !== 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      ready = await fetch(`${current.url}/health/ready`);
    }
    assert.equal(ready.status, 200, 'this release runs beside the previous one');
    assert.match(current.output(), /before the version contract/, 'and says the older one is there');

    // An account registered on the older instance, on a plan without a credit limit.
    const registered = await fetch(`${old.url}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'fleet@example.com', password: 'correct horse battery' }),
    }).then((r) => r.json() as Promise<any>);
    const key = registered.api_key.key as string;
    const accountId = registered.account.id as string;
    const plan = await call(current.url, 'PUT', `/api/admin/accounts/${accountId}/plan`, ADMIN, {
      plan: 'enterprise',
    });
    assert.equal(plan.response.status, 200);
    // Spend the trial credit down to a few requests' worth, so both instances race for what is left.
    const first = await chat(current.url, key);
    assert.equal(first.status, 200);
    const each = first.costMicros!;
    const outcomes: Outcome[] = [first];
    // Once its charge committed, what is left is set straight in the database (as an operator's SQL would be):
    // a write by no instance, which the balances kept in Redis must learn of too.
    for (let i = 0; i < 100; i++) {
      const settled = await admin.query('SELECT 1 FROM usage_records WHERE account_id = $1', [accountId]);
      if (settled.rowCount) break;
      await sleep(50);
    }
    await admin.query('UPDATE credit_grants SET remaining_micros = $2 WHERE account_id = $1', [
      accountId,
      3 * each,
    ]);
    const before = (
      await admin.query<{ id: string }>('SELECT id FROM credit_grants WHERE account_id = $1', [accountId])
    ).rows.map((row) => row.id);
    assert.equal(before.length, 1, 'the trial grant alone');
    // Balances kept in Redis learn of such a write within about a second (the ledger's trigger and ledger_moves).
    await sleep(2_500);

    // Webhooks: the endpoint is set on this release while the older one runs (so its secret stays readable).
    const endpoint = await call(current.url, 'PUT', '/api/webhooks/endpoint', key, { url: receiver.url });
    assert.equal(endpoint.response.status, 200, JSON.stringify(endpoint.body));
    const secret = endpoint.body.secret as string;
    assert.equal(await storedSecret(accountId), secret, 'not sealed while an older instance is alive');
    const shown = await call(old.url, 'GET', '/api/webhooks/endpoint', key);
    assert.equal(shown.body.secret, secret, 'the older instance shows the same secret');

    const started = Date.now();
    let toppedUp = 0;
    const events: string[] = [];
    const load = [old.url, current.url].flatMap((url) =>
      Array.from({ length: LOOPS_PER_INSTANCE }, async () => {
        while (Date.now() - started < RACE_MS) {
          const outcome = await chat(url, key);
          outcomes.push(outcome);
          if (outcome.status !== 200) await sleep(20);
        }
      }),
    );
    const topUps = (async () => {
      for (let i = 0; Date.now() - started < RACE_MS; i++) {
        await sleep(1_000);
        const via = i % 2 === 0 ? old.url : current.url;
        const grant = await call(via, 'POST', `/api/admin/accounts/${accountId}/credits`, ADMIN, {
          amount_usd: (3 * each) / 1e6,
        });
        if (grant.response.status === 200 || grant.response.status === 201) toppedUp++;
        // Deliveries triggered from both instances while they race: three rounds, within this release's
        // throttle of test events (5 a minute per account).
        if (i % 10 === 0 && i <= 20)
          for (const url of [old.url, current.url]) {
            const queued = await call(url, 'POST', '/api/webhooks/test', key, {});
            events.push(`${queued.response.status} ${JSON.stringify(queued.body)}`);
          }
      }
    })();
    await Promise.all([...load, topUps]);
    assert.ok(toppedUp > 0, 'the account was topped up during the race');

    // Every delivery arrived signed with the secret the account was shown.
    assert.ok(events.length >= 2 && events.every((e) => e.startsWith('202')), events.join('\n'));
    const sent = events.length;
    const deliveries = await receiver.waitFor(sent, 30_000);
    for (const delivery of deliveries)
      assert.equal(delivery.headers['x-service-signature'], signed(delivery.body, secret));
    assert.doesNotMatch(
      old.output(),
      /encrypted|not configured/,
      'the older instance never met a sealed secret',
    );

    // The rolling upgrade finishes: the older instance stops cleanly, and only then are secrets sealed.
    old.child.kill('SIGTERM');
    assert.equal(await old.exited, 0, `the previous release exits 0 on SIGTERM:\n${old.output()}`);
    const deadline = Date.now() + 30_000;
    while (!(await storedSecret(accountId)).startsWith('enc:v1:') && Date.now() < deadline) await sleep(250);
    assert.match(
      await storedSecret(accountId),
      /^enc:v1:/,
      'sealed once no instance that cannot open it is alive',
    );
    await call(current.url, 'POST', '/api/webhooks/test', key, {});
    const last = (await receiver.waitFor(sent + 1, 15_000)).at(-1)!;
    assert.equal(
      last.headers['x-service-signature'],
      signed(last.body, secret),
      'the sealed secret signs the same',
    );

    current.child.kill('SIGTERM');
    assert.equal(await current.exited, 0, `this release exits 0 on SIGTERM:\n${current.output()}`);

    // No overspend: nothing written off, the ledger and the usage records agree to the µUSD.
    const money = await admin.query<{ charged: string | null; uncollected: string | null }>(
      `SELECT SUM(cost_micros - uncollected_micros) AS charged, SUM(uncollected_micros) AS uncollected
       FROM usage_records WHERE account_id = $1`,
      [accountId],
    );
    const grants = await admin.query<{ added: string; remaining: string; negative: string }>(
      `SELECT SUM(CASE WHEN id = $2 THEN 0 ELSE amount_micros END) AS added, SUM(remaining_micros) AS remaining,
              SUM(CASE WHEN remaining_micros < 0 THEN 1 ELSE 0 END) AS negative
       FROM credit_grants WHERE account_id = $1`,
      [accountId, before[0]],
    );
    const account = await admin.query<{ debt: string; held: string }>(
      'SELECT debt_micros AS debt, held_micros AS held FROM accounts WHERE id = $1',
      [accountId],
    );
    const written = await admin.query<{ at: string; uncollected: string }>(
      'SELECT created_at AS at, uncollected_micros AS uncollected FROM usage_records WHERE uncollected_micros > 0',
    );
    assert.equal(
      Number(money.rows[0]!.uncollected ?? 0),
      0,
      `nothing uncollected: no overspend (${JSON.stringify(written.rows.map((r) => [Number(r.at) - started, r.uncollected]))})`,
    );
    assert.equal(Number(grants.rows[0]!.negative), 0, 'no grant below zero');
    assert.equal(Number(account.rows[0]!.debt), 0, 'no debt on a prepaid account');
    // Credit − what is left = what the usage records say was charged, exactly.
    const spent = 3 * each + Number(grants.rows[0]!.added) - Number(grants.rows[0]!.remaining);
    assert.equal(Number(money.rows[0]!.charged ?? 0) - each, spent, 'the ledger and the usage records agree');

    const answered = outcomes.filter((o) => o.status === 200);
    const records = await admin.query<{ request_id: string; cost_micros: string }>(
      'SELECT request_id, cost_micros FROM usage_records WHERE request_id = ANY($1)',
      [answered.map((o) => o.requestId)],
    );
    const billed = new Map(records.rows.map((row) => [row.request_id, Number(row.cost_micros)]));
    assert.deepEqual(
      answered.filter((o) => billed.get(o.requestId!) !== o.costMicros),
      [],
      'every 200 billed once at its announced cost',
    );
    const statuses = new Map<string, number>();
    for (const o of outcomes) statuses.set(String(o.status), (statuses.get(String(o.status)) ?? 0) + 1);
    assert.ok(answered.length > 10 && (statuses.get('402') ?? 0) > 0, JSON.stringify([...statuses]));
    console.log(
      `mixed fleet: ${JSON.stringify(Object.fromEntries(statuses))}; ${sent + 1} deliveries verified`,
    );
  });
});
