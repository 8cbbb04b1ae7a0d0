import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Db } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { openDb, type Store } from '../../src/store/store.ts';

export const POSTGRES_URL = process.env['TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface OpenedBackend {
  db: Db;
  /** The DATABASE_URL another process would use to reach the same data. */
  url: string;
  /** Schema (PostgreSQL) for a second connection to the same data. */
  schema: string | undefined;
  /** Opens another connection to the same data (a second instance). */
  reopen(): Db;
  cleanup(): Promise<void>;
}

export interface Backend {
  name: 'sqlite' | 'postgres';
  /**
   * Why the backend cannot run here (a skip reason), or undefined when it can; rejects with a clear message
   * instead when `CI=true` (see skipOrFail).
   */
  unavailable(): Promise<string | undefined>;
  open(): Promise<OpenedBackend>;
}

let postgresProbe: Promise<string | undefined> | undefined;

/**
 * What a suite does when a backing service is missing: in CI (`CI=true`) that is a failure, because a run that
 * skipped the PostgreSQL or Redis suites proves nothing about them; elsewhere the suite is skipped, and says why.
 */
export function skipOrFail(reason: string | undefined): string | undefined {
  if (reason === undefined) return undefined;
  if (process.env['CI'] === 'true' || process.env['CI'] === '1')
    throw new Error(`${reason}. CI=true: a missing backing service fails the run instead of skipping it.`);
  return `skipped: ${reason} (outside CI a missing service skips; with CI=true it fails)`;
}

const sqlite: Backend = {
  name: 'sqlite',
  unavailable: async () => undefined,
  async open() {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-test-'));
    const url = `sqlite:${join(dir, 'tollgate.db')}`;
    const db = openDb(url);
    await migrate(db);
    return {
      db,
      url,
      schema: undefined,
      reopen: () => openDb(url),
      async cleanup() {
        await db.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

const postgres: Backend = {
  name: 'postgres',
  unavailable() {
    postgresProbe ??= (async (): Promise<string | undefined> => {
      const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 10_000 });
      try {
        await client.connect();
        await client.query('SELECT 1');
        return undefined;
      } catch (error) {
        return `PostgreSQL is not reachable at ${POSTGRES_URL} (${(error as Error).message}); set TEST_DATABASE_URL`;
      } finally {
        await client.end().catch(() => {});
      }
    })().then(skipOrFail);
    return postgresProbe;
  },
  async open() {
    const schema = `tg_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.end();
    const db = openDb(POSTGRES_URL, { schema });
    await migrate(db);
    return {
      db,
      url: POSTGRES_URL,
      schema,
      reopen: () => openDb(POSTGRES_URL, { schema }),
      async cleanup() {
        await db.close();
        const client = new pg.Client({ connectionString: POSTGRES_URL });
        await client.connect();
        await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await client.end();
      },
    };
  },
};

/** The backends every store-touching suite runs against; TOLLGATE_TEST_BACKENDS=sqlite narrows the run. */
export const BACKENDS: readonly Backend[] = [sqlite, postgres].filter((backend) => {
  const only = process.env['TOLLGATE_TEST_BACKENDS'];
  return !only || only.split(',').includes(backend.name);
});

/** An Enterprise account `id` with one admin grant of `micros` that expires in a day, written straight to the store. */
export async function insertFundedAccount(
  opened: OpenedBackend,
  store: Store,
  id: string,
  micros: number,
): Promise<void> {
  const now = Date.now();
  await opened.db.run(
    "INSERT INTO accounts (id, email, password_hash, plan, created_at) VALUES ($1, $2, 'x', 'enterprise', $3)",
    [id, `${id}@example.com`, now],
  );
  await store.ledger.addGrant({
    id: `grant_${id}`,
    accountId: id,
    kind: 'admin',
    amountMicros: micros,
    remainingMicros: micros,
    expiresAt: now + 86_400_000,
    createdAt: now,
    source: null,
  });
}
