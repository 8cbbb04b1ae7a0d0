import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { settlementBatchSize } from '../../src/billing/settlement-queue.ts';
import { MemoryLimiter } from '../../src/limits/memory-limiter.ts';
import { RedisLimiter } from '../../src/limits/redis-limiter.ts';
import type { Db } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import type { Settlement } from '../../src/core/records.ts';
import { createStore, openDb } from '../../src/store/store.ts';

const SETTLEMENTS = 20_000;

export interface MicroResult {
  name: string;
  perSecond: number;
  microsEach: number;
  note: string;
}

/** Settlements per second through LedgerRepo.settle in the batches the settlement queue makes. */
export async function settleRate(db: Db, label: string): Promise<MicroResult[]> {
  await migrate(db);
  const store = createStore(db);
  const now = Date.now();
  const accounts = Array.from({ length: 100 }, (_, i) => `acct_bench_${i}`);
  for (const id of accounts) {
    await db.run(
      `INSERT INTO accounts (id, email, password_hash, plan, created_at) VALUES ($1, $2, 'x', 'enterprise', $3)`,
      [id, `${id}@bench`, now],
    );
    await store.ledger.addGrant({
      id: `grant_${id}`,
      accountId: id,
      kind: 'admin',
      amountMicros: 1e12,
      remainingMicros: 1e12,
      expiresAt: now + 86_400_000,
      createdAt: now,
      source: null,
    });
  }
  const holdsStarted = performance.now();
  const HOLDS = 5_000;
  for (let i = 0; i < HOLDS; i++)
    await store.ledger.hold(`req_b${i}`, accounts[i % accounts.length]!, 100, now, now + 3_600_000);
  const holdSeconds = (performance.now() - holdsStarted) / 1000;
  const settlements: Settlement[] = Array.from({ length: SETTLEMENTS }, (_, i) => ({
    requestId: `req_b${i}`,
    accountId: accounts[i % accounts.length]!,
    keyId: 'key_bench',
    model: 'model-b',
    deployment: 'mock/mock-model',
    promptTokens: 12,
    completionTokens: 7,
    estimated: false,
    costMicros: 3,
    status: 'ok',
    latencyMs: 1,
    ttftMs: null,
    createdAt: now,
  }));
  // The batches the settlement queue makes on this store.
  const batch = settlementBatchSize(db.capabilities);
  const started = performance.now();
  for (let i = 0; i < settlements.length; i += batch)
    await store.ledger.settle(settlements.slice(i, i + batch));
  const seconds = (performance.now() - started) / 1000;
  return [
    {
      name: `settlements, ${label}`,
      perSecond: SETTLEMENTS / seconds,
      microsEach: (seconds * 1e6) / SETTLEMENTS,
      note: `${SETTLEMENTS} in batches of ${batch} (first ${HOLDS} release a hold)`,
    },
    {
      name: `credit holds, ${label}`,
      perSecond: HOLDS / holdSeconds,
      microsEach: (holdSeconds * 1e6) / HOLDS,
      note: 'one at a time, each its own transaction',
    },
  ];
}

export async function settlementBench(postgresUrl: string): Promise<MicroResult[]> {
  const results: MicroResult[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
  const sqlite = openDb(`sqlite:${join(dir, 'bench.db')}`);
  results.push(...(await settleRate(sqlite, 'SQLite (WAL)')));
  await sqlite.close();
  rmSync(dir, { recursive: true, force: true });

  const schema = `tg_bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 2000 });
  try {
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    const db = openDb(postgresUrl, { schema });
    results.push(...(await settleRate(db, 'PostgreSQL (local)')));
    await db.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
  } catch (error) {
    results.push({
      name: 'settlements, PostgreSQL',
      perSecond: NaN,
      microsEach: NaN,
      note: `skipped: ${(error as Error).message}`,
    });
  } finally {
    await admin.end().catch(() => {});
  }
  return results;
}

/** The cost of one admission (requests/min, tokens/min and daily cap together). */
export async function admissionBench(redisUrl: string): Promise<MicroResult[]> {
  const limits = {
    requestsPerMinute: 1_000_000,
    tokensPerMinute: 1_000_000_000,
    dailyTokens: 1_000_000_000_000,
  };
  const memory = new MemoryLimiter();
  const N = 200_000;
  let started = performance.now();
  for (let i = 0; i < N; i++)
    memory.admitNow({ subject: `key${i % 1000}`, requestId: `r${i}`, limits, tokens: 50, now: Date.now() });
  let seconds = (performance.now() - started) / 1000;
  const results: MicroResult[] = [
    {
      name: 'admission, memory',
      perSecond: N / seconds,
      microsEach: (seconds * 1e6) / N,
      note: `${N} admissions over 1,000 keys`,
    },
  ];

  const client = new Redis(redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  client.on('error', () => {});
  try {
    await client.connect();
    const prefix = `tgbench${process.pid}`;
    const limiter = new RedisLimiter(client, prefix);
    const M = 10_000;
    started = performance.now();
    for (let i = 0; i < M; i++)
      await limiter.admit({
        subject: `key${i % 100}`,
        requestId: `r${i}`,
        limits,
        tokens: 50,
        now: Date.now(),
      });
    seconds = (performance.now() - started) / 1000;
    results.push({
      name: 'admission, Redis (one at a time)',
      perSecond: M / seconds,
      microsEach: (seconds * 1e6) / M,
      note: 'one Lua script, one round trip on loopback',
    });
    started = performance.now();
    const C = 64;
    let next = 0;
    await Promise.all(
      Array.from({ length: C }, async () => {
        while (next < M) {
          const i = next++;
          await limiter.admit({
            subject: `key${i % 100}`,
            requestId: `c${i}`,
            limits,
            tokens: 50,
            now: Date.now(),
          });
        }
      }),
    );
    seconds = (performance.now() - started) / 1000;
    results.push({
      name: `admission, Redis (${C} concurrent)`,
      perSecond: M / seconds,
      microsEach: (seconds * 1e6) / M,
      note: 'throughput with concurrent callers',
    });
    const keys = await client.keys(`${prefix}:*`);
    for (let i = 0; i < keys.length; i += 500) await client.del(...keys.slice(i, i + 500));
  } catch (error) {
    results.push({
      name: 'admission, Redis',
      perSecond: NaN,
      microsEach: NaN,
      note: `skipped: ${(error as Error).message}`,
    });
  } finally {
    client.disconnect();
  }
  return results;
}
