import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { POSTGRES_URL } from './backends.ts';
import { type RunningGateway, startGatewayProcess } from './process.ts';
import { type OwnRedis, startRedisServer } from './redis-server.ts';

export type StoreKind = 'sqlite' | 'postgres' | 'postgres+redis';
export const STORE_KINDS: readonly StoreKind[] = ['sqlite', 'postgres', 'postgres+redis'];

const ADMIN = 'tg-admin-cold-start-0123456789abcdef';
export const COLD_BODY = {
  model: 'model-a',
  max_tokens: 5,
  messages: [{ role: 'user', content: 'cold start, briefly' }],
};

/** A store of its own (a SQLite file, a fresh PostgreSQL database, a redis-server of its own) and a funded key. */
export interface ColdStore {
  kind: StoreKind;
  env: Record<string, string>;
  /** An API key of an Enterprise account, made by an instance that has stopped since. */
  key: string;
  /** Empties the store's Redis (a first instance on a new Redis); nothing without Redis. */
  emptyRedis(): Promise<void>;
  cleanup(): Promise<void>;
}

/** Prepares a store of `kind` with one funded key, made by an instance that is stopped again before returning. */
export async function prepareColdStore(kind: StoreKind): Promise<ColdStore> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-cold-'));
  const config = join(dir, 'tollgate.yaml');
  writeFileSync(config, 'simulator:\n  chunk_interval_ms: 1\n');
  const env: Record<string, string> = {
    TOLLGATE_ADMIN_KEY: ADMIN,
    TOLLGATE_CONFIG: config,
    LOG_LEVEL: 'error',
  };
  let owner: pg.Client | undefined;
  let redis: OwnRedis | undefined;
  const database = `tg_cold_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  if (kind === 'sqlite') env['DATABASE_URL'] = `sqlite:${join(dir, 'tollgate.db')}`;
  else {
    owner = new pg.Client({ connectionString: POSTGRES_URL });
    await owner.connect();
    await owner.query(`CREATE DATABASE ${database}`);
    const url = new URL(POSTGRES_URL);
    url.pathname = `/${database}`;
    env['DATABASE_URL'] = url.toString();
  }
  if (kind === 'postgres+redis') {
    redis = await startRedisServer();
    env['REDIS_URL'] = redis.url;
  }
  const cleanup = async (): Promise<void> => {
    await redis?.stop();
    if (owner) {
      await owner.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
        [database],
      );
      await owner.query(`DROP DATABASE IF EXISTS ${database}`);
      await owner.end();
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const seeder = await startGatewayProcess(env);
    const key = await fundedKey(seeder.url, 'cold@example.com');
    seeder.child.kill('SIGTERM');
    await seeder.exited;
    return {
      kind,
      env,
      key,
      emptyRedis: async () => redis?.restart(),
      cleanup,
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/** Registers an account, puts it on the Enterprise plan (USD 100 a month) and returns its key. */
export async function fundedKey(url: string, email: string): Promise<string> {
  const registered = (await (
    await fetch(`${url}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'correct horse battery' }),
    })
  ).json()) as { account: { id: string }; api_key: { key: string } };
  const planned = await fetch(`${url}/api/admin/accounts/${registered.account.id}/plan`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ plan: 'enterprise' }),
  });
  if (planned.status !== 200) throw new Error(`plan change answered ${planned.status}`);
  return registered.api_key.key;
}

/** One chat completion; its status and how long it took, from sending it to the end of its body. */
export async function timedChat(url: string, key: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(COLD_BODY),
    signal: AbortSignal.timeout(30_000),
  });
  await response.arrayBuffer();
  return { status: response.status, ms: performance.now() - started };
}

/** Polls `path` every 5 ms until it answers 200; resolves with when it did (performance.now()). */
export async function answersOk(url: string, path: string, withinMs = 30_000): Promise<number> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    const status = await fetch(`${url}${path}`)
      .then(async (r) => (await r.arrayBuffer(), r.status))
      .catch(() => 0);
    if (status === 200) return performance.now();
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`${url}${path} did not answer 200 within ${withinMs} ms`);
}

export interface ColdRun {
  /** From start to `path` answering 200. */
  readyMs: number;
  /** The five sent at once, then the one after them. */
  first: { status: number; ms: number }[];
  next: { status: number; ms: number };
  /** Five at once again, a second later: what a warm instance takes under the same load. */
  later: { status: number; ms: number }[];
  gateway: RunningGateway;
}

/** Starts a new instance on the store, waits for `path` to answer 200, then sends five requests at once and one more. */
export async function coldRun(store: ColdStore, path: string): Promise<ColdRun> {
  const started = performance.now();
  const gateway = await startGatewayProcess(store.env);
  const readyAt = await answersOk(gateway.url, path);
  const first = await Promise.all(Array.from({ length: 5 }, () => timedChat(gateway.url, store.key)));
  const next = await timedChat(gateway.url, store.key);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const later = await Promise.all(Array.from({ length: 5 }, () => timedChat(gateway.url, store.key)));
  return { readyMs: readyAt - started, first, next, later, gateway };
}
