/**
 * Many instances on one PostgreSQL and one Redis: `node bench/cluster.ts [postgres://…] [seconds]`.
 * Measures settlements per second on PostgreSQL, credit holds per second in Redis on one hot account from
 * three processes, and three gateway processes under load (throughput, p50/p99, and the database's CPU per
 * request, read from /proc for the PostgreSQL backends serving this run's database). Writes
 * docs/performance-cluster.md. Uses a fresh database and a redis-server of its own on a free port.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import pg from 'pg';
import { Pool } from 'undici';
import { RedisHoldBook } from '../src/billing/redis-hold-book.ts';
import { createRedisClient } from '../src/composition/connect-redis.ts';
import { createStore, openDb } from '../src/store/store.ts';
import { startGatewayProcess } from '../test/helpers/process.ts';
import { startRedisServer } from '../test/helpers/redis-server.ts';
import { CHAT_BODY, summarize } from './lib/load.ts';
import { settleRate } from './lib/micro.ts';
import { cpuSeconds } from './lib/processes.ts';
import { startMock } from './lib/mock.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const ADMIN = 'tg-admin-bench-cluster-0123456789abcdef';
const HOT_ACCOUNT = 'acct_hot';

if (process.argv[2] === 'holds-worker') await holdsWorker();
else await main();

/** One of three processes taking holds on one account for a while; prints how many. */
async function holdsWorker(): Promise<void> {
  const [, , , databaseUrl, redisUrl, seconds] = process.argv;
  const db = openDb(databaseUrl!);
  const redis = createRedisClient(redisUrl!, { maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  const book = new RedisHoldBook({
    redis,
    ledger: createStore(db).ledger,
    logger: pino({ level: 'silent' }),
  });
  await book.start(() => {});
  const now = Date.now();
  // Warm: the account's balance is read into Redis once.
  await book.hold(`warm_${book.instanceId}`, HOT_ACCOUNT, 1, now, now + 60_000);
  const stopAt = performance.now() + Number(seconds) * 1000;
  let taken = 0;
  let refused = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 32 }, async (_, lane) => {
      for (let i = 0; performance.now() < stopAt; i++) {
        const ok = await book.hold(`h_${book.instanceId}_${lane}_${i}`, HOT_ACCOUNT, 1, now, now + 60_000);
        if (ok) taken++;
        else refused++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  console.log(JSON.stringify({ taken, refused, seconds: elapsed }));
  await book.close();
  redis.disconnect();
  await db.close();
}

function postgresBackendCpu(pids: readonly number[]): number {
  let total = 0;
  for (const pid of pids) {
    try {
      total += cpuSeconds(pid);
    } catch {
      // The backend ended (a pool closed a connection): its CPU is lost to this sum.
    }
  }
  return total;
}

async function main(): Promise<void> {
  const postgresUrl = process.argv[2] ?? 'postgres://postgres@127.0.0.1:5432/test';
  const seconds = Number(process.argv[3] ?? 10);
  const database = `tg_bench_cluster_${process.pid}`;
  const owner = new pg.Client({ connectionString: postgresUrl });
  await owner.connect();
  await owner.query(`CREATE DATABASE ${database}`);
  const url = new URL(postgresUrl);
  url.pathname = `/${database}`;
  const databaseUrl = url.toString();
  const redis = await startRedisServer();
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-cluster-'));
  const lines: string[] = [];
  const load = loadavg()[0]!.toFixed(1);
  try {
    // 1. Settlements per second (and PostgreSQL holds, for comparison), on this database.
    const db = openDb(databaseUrl);
    const settle = await settleRate(db, 'PostgreSQL (local)');
    await db.close();

    // 2. Redis holds on one hot account, from three processes.
    const seeding = openDb(databaseUrl);
    await seeding.run(
      `INSERT INTO accounts (id, email, password_hash, plan, created_at) VALUES ($1, 'hot@bench', 'x', 'enterprise', $2)`,
      [HOT_ACCOUNT, Date.now()],
    );
    await createStore(seeding).ledger.addGrant({
      id: 'grant_hot',
      accountId: HOT_ACCOUNT,
      kind: 'admin',
      amountMicros: 1e12,
      remainingMicros: 1e12,
      expiresAt: Date.now() + 86_400_000,
      createdAt: Date.now(),
      source: null,
    });
    await seeding.close();
    const workers = await Promise.all(
      Array.from({ length: 3 }, () => runWorker([databaseUrl, redis.url, String(Math.min(seconds, 5))])),
    );
    const holdsTaken = workers.reduce((sum, w) => sum + w.taken, 0);
    const holdsPerSecond = holdsTaken / Math.max(...workers.map((w) => w.seconds));

    // 3. Three gateway processes under load.
    const mock = await startMock();
    const config = join(dir, 'tollgate.yaml');
    writeFileSync(
      config,
      `providers:\n  - { id: mock, type: openai, base_url: "http://127.0.0.1:${mock.port}/v1" }\nmodels:\n  model-b:\n    deployments: [{ provider: mock, model: mock-model }]\n`,
    );
    const env = {
      DATABASE_URL: databaseUrl,
      REDIS_URL: redis.url,
      TOLLGATE_CONFIG: config,
      TOLLGATE_ADMIN_KEY: ADMIN,
      LOG_LEVEL: 'error',
    };
    const first = await startGatewayProcess(env);
    const gateways = [first, ...(await Promise.all([startGatewayProcess(env), startGatewayProcess(env)]))];
    const registered = (await (
      await fetch(`${first.url}/api/auth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'bench@example.com', password: 'benchmark-password' }),
      })
    ).json()) as { api_key: { key: string }; account: { id: string } };
    const admin = (path: string, method: string, body: unknown) =>
      fetch(`${first.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    await admin(`/api/admin/accounts/${registered.account.id}/plan`, 'PUT', { plan: 'enterprise' });
    await admin(`/api/admin/accounts/${registered.account.id}/limits`, 'PUT', {
      rpm: null,
      tpm: null,
      daily_tokens: null,
    });
    await admin(`/api/admin/accounts/${registered.account.id}/credits`, 'POST', { amount_usd: 1_000_000 });
    const body = JSON.stringify(CHAT_BODY);
    const headers = {
      'content-type': 'application/json',
      authorization: `Bearer ${registered.api_key.key}`,
    };
    const pools = gateways.map((g) => new Pool(g.url, { connections: 16 }));
    const run = async (durationMs: number) => {
      const latencies: number[] = [];
      let non200 = 0;
      const stopAt = performance.now() + durationMs;
      await Promise.all(
        pools.flatMap((pool) =>
          Array.from({ length: 16 }, async () => {
            while (performance.now() < stopAt) {
              const sent = performance.now();
              const response = await pool.request({
                path: '/v1/chat/completions',
                method: 'POST',
                headers,
                body,
              });
              await response.body.text();
              latencies.push(performance.now() - sent);
              if (response.statusCode !== 200) non200++;
            }
          }),
        ),
      );
      return { latencies, non200 };
    };
    await run(2_000); // warm
    const backends = await owner.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = $1',
      [database],
    );
    const pids = backends.rows.map((row) => row.pid);
    const cpuBefore = postgresBackendCpu(pids);
    const gatewayCpuBefore = gateways.reduce((sum, g) => sum + cpuSeconds(g.child.pid!), 0);
    const started = performance.now();
    const measured = await run(seconds * 1000);
    const elapsed = (performance.now() - started) / 1000;
    const dbCpu = postgresBackendCpu(pids) - cpuBefore;
    const gatewayCpu = gateways.reduce((sum, g) => sum + cpuSeconds(g.child.pid!), 0) - gatewayCpuBefore;
    for (const pool of pools) await pool.close();
    for (const gateway of gateways) gateway.child.kill('SIGTERM');
    await Promise.all(gateways.map((g) => g.exited));
    await mock.process.stop();
    const latency = summarize(measured.latencies);
    const requests = measured.latencies.length;
    const perRequestMs = (dbCpu * 1000) / requests;

    const settlements = settle.find((r) => r.name.startsWith('settlements'))!;
    const pgHolds = settle.find((r) => r.name.startsWith('credit holds'))!;
    const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
    lines.push(
      '# Performance: many instances (issue 20)',
      '',
      `Written by \`node bench/cluster.ts\` on ${new Date().toISOString()} (${cpus().length} cores, load average ${load} at the start). Each part uses a fresh PostgreSQL database and a redis-server of its own.`,
      '',
      '| what | before (issue 20) | this run | target |',
      '| --- | ---: | ---: | ---: |',
      `| settlements/s, local PostgreSQL (the queue's batches: 1,024 here) | 864 | ${fmt(settlements.perSecond)} | ≥ 20,000 |`,
      `| credit holds/s, one hot account, three processes (Redis) | 522 (PostgreSQL, one at a time) | ${fmt(holdsPerSecond)} | ≥ 10,000 |`,
      `| credit holds/s, PostgreSQL, one transaction each (the path without Redis, for reference) | 522 | ${fmt(pgHolds.perSecond)} | — |`,
      `| cluster throughput, three gateway processes, 48 connections | 723 req/s | ${fmt(requests / elapsed)} req/s (p50 ${latency.p50.toFixed(1)} ms, p99 ${latency.p99.toFixed(1)} ms, ${measured.non200} not 200) | ≥ 1,446 req/s |`,
      `| database CPU per chat request at that load | ~0.8 ms | ${perRequestMs.toFixed(3)} ms (${dbCpu.toFixed(2)} s over ${requests} requests) | ≤ 0.1 ms |`,
      `| gateway CPU per chat request (three processes together) | — | ${((gatewayCpu * 1000) / requests).toFixed(3)} ms | — |`,
      '',
      'How: settlements are `LedgerRepo.settle` in the settlement queue’s batches (bench/lib/micro.ts, after',
      '5,000 PostgreSQL holds); Redis holds are `RedisHoldBook.hold` from three processes, 32 in flight each, on',
      'one account; the cluster run is three `src/main.ts` processes on PostgreSQL and Redis (holds in Redis) in',
      `front of the mock upstream, ${seconds} s closed loop after 2 s of warm-up; database CPU is the user + system`,
      'time in /proc of the PostgreSQL backends serving this database (the processes listed by pg_stat_activity).',
      'The machine is shared: figures from a busy machine are floors.',
      '',
    );
    writeFileSync(join(ROOT, 'docs/performance-cluster.md'), lines.join('\n'));
    console.log(lines.join('\n'));
  } finally {
    await redis.stop();
    await owner.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
      [database],
    );
    await owner.query(`DROP DATABASE IF EXISTS ${database}`);
    await owner.end();
    rmSync(dir, { recursive: true, force: true });
  }
}

function runWorker(args: string[]): Promise<{ taken: number; refused: number; seconds: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'bench/cluster.ts'), 'holds-worker', ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (piece: Buffer) => (output += piece.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = output.trim().split('\n').at(-1) ?? '';
      if (code !== 0) reject(new Error(`holds worker exited ${code}: ${output}`));
      else resolve(JSON.parse(line) as { taken: number; refused: number; seconds: number });
    });
  });
}
