import { readdirSync, readFileSync } from 'node:fs';
import type { Db } from './db.ts';

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);
/** An arbitrary constant: the PostgreSQL advisory lock that serializes instances migrating at once. */
const MIGRATION_LOCK = 7_301_846;

interface MigrationFile {
  /** The id recorded in schema_migrations: the file name without its engine suffix and `.sql`. */
  version: string;
  /** The file to run on this engine, or undefined: the migration is for the other engine only (recorded, nothing run). */
  file: string | undefined;
}

/**
 * The migrations this build knows, in order. `NNN-name.sql` runs on both engines; `NNN-name.postgres.sql` or
 * `NNN-name.sqlite.sql` on that engine only (its id is still recorded on the other, so both list the same ids).
 */
function knownMigrations(dialect: Db['dialect']): MigrationFile[] {
  const byVersion = new Map<string, string | undefined>();
  for (const name of readdirSync(MIGRATIONS_DIR).filter((n) => n.endsWith('.sql'))) {
    const match = /^(.*?)(?:\.(postgres|sqlite))?\.sql$/.exec(name)!;
    const version = match[1]!;
    const engine = match[2];
    if (!byVersion.has(version)) byVersion.set(version, undefined);
    if (engine === undefined || engine === dialect) byVersion.set(version, name);
  }
  return [...byVersion.keys()].sort().map((version) => ({ version, file: byVersion.get(version) }));
}

/** The ids of the migrations this build knows, oldest first (the same on both engines). */
export function knownMigrationIds(): string[] {
  return knownMigrations('sqlite').map((m) => m.version);
}

/** The newest migration this build knows: the schema it needs. */
export const SCHEMA_VERSION = knownMigrationIds().at(-1)!;

const ensureTable = (db: Db): Promise<number> =>
  db.run(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)',
  );

/** Applies, in order and once each, the versioned migration files not yet recorded; returns their names. */
export async function migrate(db: Db, now: number = Date.now()): Promise<string[]> {
  await ensureTable(db);
  const applied: string[] = [];
  for (const { version, file } of knownMigrations(db.dialect)) {
    const done = await db.transaction(async (tx) => {
      if (tx.capabilities.advisoryLocks) await tx.get('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      const seen = await tx.get('SELECT version FROM schema_migrations WHERE version = $1', [version]);
      if (seen) return false;
      if (file !== undefined) {
        const sql = readFileSync(new URL(file, MIGRATIONS_DIR), 'utf8');
        for (const statement of splitStatements(sql)) await tx.run(statement);
      }
      await tx.run('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [version, now]);
      return true;
    });
    if (done) applied.push(version);
  }
  return applied;
}

export interface MigrationStatus {
  /** Recorded in the database and known to this build, with when each was applied (ms). */
  applied: { version: string; appliedAt: number }[];
  /** Known to this build, not applied yet. */
  pending: string[];
  /** Recorded in the database but unknown to this build: a newer release migrated it. */
  unknown: { version: string; appliedAt: number }[];
}

/** What is applied, pending and newer than this build; reads only (creates nothing on an empty database). */
export async function migrationStatus(db: Db): Promise<MigrationStatus> {
  let rows: { version: string; applied_at: number | string }[] = [];
  try {
    rows = await db.all('SELECT version, applied_at FROM schema_migrations ORDER BY version');
  } catch (error) {
    if (!/schema_migrations/.test((error as Error).message)) throw error;
  }
  const known = new Set(knownMigrationIds());
  const recorded = new Map(rows.map((row) => [row.version, Number(row.applied_at)]));
  return {
    applied: rows
      .filter((row) => known.has(row.version))
      .map((row) => ({ version: row.version, appliedAt: Number(row.applied_at) })),
    pending: [...known].filter((version) => !recorded.has(version)),
    unknown: rows
      .filter((row) => !known.has(row.version))
      .map((row) => ({ version: row.version, appliedAt: Number(row.applied_at) })),
  };
}

/**
 * Splits a migration file on the semicolons that end its statements. A semicolon inside a `$$`-quoted body
 * (a PostgreSQL function) or inside a trigger's `BEGIN … END` (SQLite) does not end the statement.
 */
export function splitStatements(sql: string): string[] {
  const text = sql
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('--'))
    .join('\n');
  const statements: string[] = [];
  let current = '';
  let dollar = false;
  for (let i = 0; i < text.length; i++) {
    if (text.startsWith('$$', i)) {
      dollar = !dollar;
      current += '$$';
      i++;
      continue;
    }
    const ch = text[i]!;
    if (ch === ';' && !dollar && !insideTriggerBody(current)) {
      statements.push(current.trim());
      current = '';
      continue;
    }
    current += ch;
  }
  statements.push(current.trim());
  return statements.filter(Boolean);
}

/** A `CREATE TRIGGER … BEGIN` whose `END` has not come yet. */
function insideTriggerBody(statement: string): boolean {
  if (!/^\s*CREATE\s+TRIGGER\b/i.test(statement) || !/\bBEGIN\b/i.test(statement)) return false;
  return !/\bEND\s*$/i.test(statement);
}
