import { closeSync, existsSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { backup, DatabaseSync } from 'node:sqlite';

export interface SqliteBackup {
  pages: number;
  bytes: number;
  /** Migrations recorded in the copy: what a release starting from it will find applied. */
  migrations: number;
}

/** Every page in one step: one consistent snapshot (a WAL reader), never restarted by the live writer. */
const ALL_PAGES = 2 ** 31 - 1;

/**
 * Copies a live SQLite database (the embedded store, WAL mode, in use by the gateway) with SQLite's online
 * backup: a consistent snapshot that the running gateway keeps writing past. The copy is checked
 * (integrity_check) and made a single self-contained file (rollback journal rather than WAL) before it takes
 * the destination's name; it is created 0600, as the database holds password hashes and sealed secrets.
 * Refuses to overwrite an existing file.
 */
export async function backupSqlite(source: string, destination: string): Promise<SqliteBackup> {
  if (!existsSync(source)) throw new Error(`no database at ${source}`);
  if (existsSync(destination)) throw new Error(`${destination} exists: a backup never overwrites a file`);
  const partial = `${destination}.partial`;
  rmSync(partial, { force: true });
  closeSync(openSync(partial, 'wx', 0o600));
  try {
    const live = new DatabaseSync(source);
    let pages: number;
    try {
      live.exec('PRAGMA busy_timeout = 5000');
      pages = await backup(live, partial, { rate: ALL_PAGES });
    } finally {
      live.close();
    }
    const migrations = checkCopy(partial);
    renameSync(partial, destination);
    return { pages, bytes: statSync(destination).size, migrations };
  } catch (error) {
    for (const file of [partial, `${partial}-wal`, `${partial}-shm`]) rmSync(file, { force: true });
    throw error;
  }
}

/** The copy passes integrity_check and is one file; returns the number of migrations it records. */
function checkCopy(path: string): number {
  const copy = new DatabaseSync(path);
  try {
    const check = copy.prepare('PRAGMA integrity_check').all() as { integrity_check: string }[];
    const problems = check.map((row) => row.integrity_check).filter((line) => line !== 'ok');
    if (problems.length > 0) throw new Error(`the copy fails integrity_check: ${problems.join('; ')}`);
    copy.exec('PRAGMA journal_mode = DELETE');
    const migrations = copy.prepare('SELECT count(*) AS n FROM schema_migrations').get() as { n: number };
    return Number(migrations.n);
  } finally {
    copy.close();
  }
}
