import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import { type Db, type SqlParam, SQLITE_CAPABILITIES } from '../db.ts';

/** Opens (creating if needed) a SQLite file in WAL mode; `:memory:` works too. */
export function createSqliteDb(path: string): Db {
  if (path !== ':memory:') ownerOnly(path);
  const database = new DatabaseSync(path);
  database.exec(
    'PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;',
  );
  if (path === ':memory:') return new SqliteDb(database, undefined);
  // node:sqlite is synchronous: a checkpoint (which fsyncs) on this connection would stall the event loop.
  // Commits only append to the WAL; a worker thread with its own connection checkpoints in the background.
  database.exec('PRAGMA wal_autocheckpoint = 0');
  return new SqliteDb(database, startCheckpointer(path));
}

/**
 * The database holds password hashes and webhook signing secrets: its directory is created 0700 and the file
 * 0600 before SQLite opens it (SQLite gives its -wal and -shm files the database file's mode). A file that
 * already exists is narrowed to 0600 too, with its -wal and -shm.
 */
function ownerOnly(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  if (!existsSync(path)) closeSync(openSync(path, 'a', 0o600));
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      chmodSync(file, 0o600);
    } catch {
      // Absent (-wal, -shm before the first write) or not ours to change: SQLite still opens it.
    }
  }
}

const CHECKPOINT_EVERY_MS = 1_000;

function startCheckpointer(path: string): Worker {
  const worker = new Worker(
    `const { DatabaseSync } = require('node:sqlite');
     const { workerData } = require('node:worker_threads');
     const db = new DatabaseSync(workerData.path);
     db.exec('PRAGMA busy_timeout = 1000');
     setInterval(() => { try { db.exec('PRAGMA wal_checkpoint(PASSIVE)'); } catch {} }, workerData.everyMs);`,
    { eval: true, workerData: { path, everyMs: CHECKPOINT_EVERY_MS } },
  );
  worker.unref();
  return worker;
}

/** `$1` placeholders become SQLite's numbered `?1`, so one SQL text serves both engines. */
const convertPlaceholders = (sql: string): string => sql.replace(/\$(\d+)/g, '?$1');

class SqliteDb implements Db {
  readonly dialect = 'sqlite';
  readonly capabilities = SQLITE_CAPABILITIES;
  readonly forUpdate = '';
  readonly skipLocked = '';
  readonly #database: DatabaseSync;
  readonly #statements = new Map<string, StatementSync>();
  /** Resolves when the open transaction (if any) ends; statements outside it wait for it. */
  #txDone: Promise<void> | undefined;
  #writes = 0;
  #totalChanges: StatementSync | undefined;

  readonly #checkpointer: Worker | undefined;

  constructor(database: DatabaseSync, checkpointer: Worker | undefined) {
    this.#database = database;
    this.#checkpointer = checkpointer;
  }

  #statement(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.#database.prepare(convertPlaceholders(sql));
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  // Callers wait with `while (this.#txDone) await this.#txDone;` written out in place: the check that the
  // connection is free and the work that follows must run in one synchronous step, or another waiter
  // resuming first could open a transaction in between (and our statement would land inside it).

  allNow<T>(sql: string, params: readonly SqlParam[]): T[] {
    return this.#statement(sql).all(...params) as T[];
  }

  getNow<T>(sql: string, params: readonly SqlParam[]): T | undefined {
    return this.#statement(sql).get(...params) as T | undefined;
  }

  readNow<T>(sql: string, params: readonly SqlParam[] = []): T | undefined {
    return this.getNow<T>(sql, params);
  }

  get writes(): number {
    return this.#writes;
  }

  runNow(sql: string, params: readonly SqlParam[]): number {
    return Number(this.#statement(sql).run(...params).changes);
  }

  async all<T>(sql: string, params: readonly SqlParam[] = []): Promise<T[]> {
    while (this.#txDone) await this.#txDone;
    const changes = this.#changes();
    try {
      return this.allNow<T>(sql, params);
    } finally {
      this.#countChanges(changes);
    }
  }

  async get<T>(sql: string, params: readonly SqlParam[] = []): Promise<T | undefined> {
    while (this.#txDone) await this.#txDone;
    const changes = this.#changes();
    try {
      return this.getNow<T>(sql, params);
    } finally {
      this.#countChanges(changes);
    }
  }

  async run(sql: string, params: readonly SqlParam[] = []): Promise<number> {
    while (this.#txDone) await this.#txDone;
    // The statement's own count says whether it changed a row (SQLite's triggers fire per changed row, so none
    // ran if it is 0): no total_changes() read before and after, as all and get need for RETURNING statements.
    // A statement that throws counts as a change.
    let changed = -1;
    try {
      changed = this.runNow(sql, params);
      return changed;
    } finally {
      if (changed !== 0) this.#writes++;
    }
  }

  /**
   * Rows changed on this connection since it opened: SQLite's total_changes(), which counts every row an
   * INSERT, UPDATE or DELETE changed, triggers' included (it never goes down, even on a rollback).
   */
  #changes(): number {
    this.#totalChanges ??= this.#database.prepare('SELECT total_changes() AS n');
    return Number((this.#totalChanges.get() as { n: number | bigint }).n);
  }

  /**
   * `writes` moves only if something changed since `before`: a queue poll or a lease check that changed no row
   * (the webhook dispatcher polls every second) leaves the hold book's remembered balances valid, so a caller's
   * next request does not read its balance again before it goes upstream.
   */
  #countChanges(before: number): void {
    let now = NaN;
    try {
      now = this.#changes();
    } catch {
      // Unknown (the connection closed meanwhile): counted as a change.
    }
    if (now !== before) this.#writes++;
  }

  async transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
    while (this.#txDone) await this.#txDone;
    const changes = this.#changes();
    // Begin before claiming the connection: a BEGIN that throws (busy, closed) must leave nothing claimed.
    this.#database.exec('BEGIN IMMEDIATE');
    let finish!: () => void;
    this.#txDone = new Promise((resolve) => (finish = resolve));
    try {
      const result = await fn(new SqliteTx(this));
      this.#database.exec('COMMIT');
      return result;
    } catch (error) {
      if (this.#database.isTransaction) this.#database.exec('ROLLBACK');
      throw error;
    } finally {
      // What was read inside the transaction (its own uncommitted writes) is stale once it ends either way;
      // a transaction that changed no row read only what was committed.
      this.#countChanges(changes);
      this.#txDone = undefined;
      finish();
    }
  }

  async ping(): Promise<number> {
    const started = performance.now();
    this.#database.prepare('SELECT 1').get();
    return performance.now() - started;
  }

  async close(): Promise<void> {
    while (this.#txDone) await this.#txDone;
    await this.#checkpointer?.terminate();
    if (this.#database.isOpen) {
      this.#database.exec('PRAGMA wal_checkpoint(TRUNCATE)');
      this.#database.close();
    }
  }
}

/** The view of the database inside a transaction: runs at once, never waits for itself. */
class SqliteTx implements Db {
  readonly dialect = 'sqlite';
  readonly capabilities = SQLITE_CAPABILITIES;
  readonly forUpdate = '';
  readonly skipLocked = '';
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    this.#db = db;
  }
  async all<T>(sql: string, params: readonly SqlParam[] = []): Promise<T[]> {
    return this.#db.allNow<T>(sql, params);
  }
  async get<T>(sql: string, params: readonly SqlParam[] = []): Promise<T | undefined> {
    return this.#db.getNow<T>(sql, params);
  }
  async run(sql: string, params: readonly SqlParam[] = []): Promise<number> {
    return this.#db.runNow(sql, params);
  }
  async transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
    return fn(this);
  }
  ping(): Promise<number> {
    return this.#db.ping();
  }
  async close(): Promise<void> {}
}
