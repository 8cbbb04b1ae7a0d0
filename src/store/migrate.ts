import { readdirSync, readFileSync } from 'node:fs';
import type { Db } from './db.ts';

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);
/** An arbitrary constant: the PostgreSQL advisory lock that serializes instances migrating at once. */
const MIGRATION_LOCK = 7_301_846;

/** Applies, in order and once each, the versioned migration files not yet recorded; returns their names. */
export async function migrate(db: Db, now: number = Date.now()): Promise<string[]> {
  await db.run(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)',
  );
  const files = readdirSync(MIGRATIONS_DIR)
    .filter((name) => name.endsWith('.sql'))
    .sort();
  const applied: string[] = [];
  for (const file of files) {
    const version = file.replace(/\.sql$/, '');
    const done = await db.transaction(async (tx) => {
      if (tx.capabilities.advisoryLocks) await tx.get('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      const seen = await tx.get('SELECT version FROM schema_migrations WHERE version = $1', [version]);
      if (seen) return false;
      const sql = readFileSync(new URL(file, MIGRATIONS_DIR), 'utf8');
      for (const statement of splitStatements(sql)) await tx.run(statement);
      await tx.run('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [version, now]);
      return true;
    });
    if (done) applied.push(version);
  }
  return applied;
}

/** Splits a migration file on the semicolons that end its statements (the files hold no procedural code). */
function splitStatements(sql: string): string[] {
  return sql
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('--'))
    .join('\n')
    .split(';')
    .map((statement) => statement.trim())
    .filter(Boolean);
}
