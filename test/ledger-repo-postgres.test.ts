// The ledger's cases (src/store/ledger-repo.cases.ts) on the machine's PostgreSQL, where a settlement batch takes
// the set-based path (settleBatch, chargeAll) that SQLite never runs. One schema for the file, emptied before each
// case and dropped at the end. Stryker runs this file too (stryker.config.json), so its mutants of that path are
// tested; it lives in test/ because the unit tier beside the code uses no services (docs/testing.md).
import { after, before, describe } from 'node:test';
import pg from 'pg';
import type { Db } from '../src/store/db.ts';
import { ledgerRepoCases } from '../src/store/ledger-repo.cases.ts';
import { migrate } from '../src/store/migrate.ts';
import { openDb } from '../src/store/store.ts';
import { BACKENDS, POSTGRES_URL } from './helpers/backends.ts';

const SCHEMA_PREFIX = 'tg_ledger_';
/** What the cases write, children before the accounts they belong to. */
const LEDGER_TABLES = [
  'usage_records',
  'usage_daily',
  'holds',
  'credit_grants',
  'instance_leases',
  // An account's owner membership refers to it.
  'members',
  'accounts',
];
const postgres = BACKENDS.find((backend) => backend.name === 'postgres');
const skip = postgres
  ? await postgres.unavailable()
  : 'skipped: TOLLGATE_TEST_BACKENDS leaves PostgreSQL out';

/** Whether a process still runs (the owner of a schema left behind). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Creates this process's schema. A mutation run kills a test process that times out before it can clean up:
 * the schemas of processes that no longer run are dropped here.
 */
async function createSchema(schema: string): Promise<void> {
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ name: string }>(
      'SELECT nspname AS name FROM pg_namespace WHERE starts_with(nspname, $1)',
      [SCHEMA_PREFIX],
    );
    for (const { name } of rows) {
      const pid = Number(name.slice(SCHEMA_PREFIX.length).split('_')[0]);
      if (!alive(pid)) await admin.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`).catch(() => {});
    }
    await admin.query(`CREATE SCHEMA ${schema}`);
  } finally {
    await admin.end();
  }
}

async function dropSchema(schema: string): Promise<void> {
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  try {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await admin.end();
  }
}

describe('LedgerRepo on PostgreSQL', { skip }, () => {
  const schema = `${SCHEMA_PREFIX}${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  let db: Db | undefined;

  before(async () => {
    await createSchema(schema);
    db = openDb(POSTGRES_URL, { schema });
    await migrate(db);
  });

  after(async () => {
    await db?.close();
    await dropSchema(schema);
  });

  ledgerRepoCases({
    name: 'postgres',
    async fresh() {
      // DELETE, not TRUNCATE: on tables this small it is a few milliseconds against a few hundred.
      for (const table of LEDGER_TABLES) await db!.run(`DELETE FROM ${table}`);
      return db!;
    },
  });
});
