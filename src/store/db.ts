/** A row as it comes back from either backend: column name to value. */
export type Row = Record<string, unknown>;
export type SqlParam = string | number | bigint | null;

/** What an engine can do, or how it is best used: code asks these, never the engine's name. */
export interface DbCapabilities {
  /**
   * Only this process uses the database (an embedded file): a hold row left in it at start-up belongs to a
   * process that died, whatever its expiry.
   */
  readonly singleProcess: boolean;
  /**
   * Each statement is a network round trip: a settlement batch is applied in a fixed number of multi-row
   * statements rather than one statement per row (which is fastest where a statement costs microseconds).
   */
  readonly setBasedSettlement: boolean;
  /** Transaction-scoped advisory locks, so that instances starting together apply each migration once. */
  readonly advisoryLocks: boolean;
  /**
   * Triggers move an account's ledger version on every write that changes its spendable credit, except inside
   * a settlement that says it moves the version itself (`SET LOCAL tollgate.settling`).
   */
  readonly ledgerTriggers: boolean;
}

export const SQLITE_CAPABILITIES: DbCapabilities = Object.freeze({
  singleProcess: true,
  setBasedSettlement: false,
  advisoryLocks: false,
  ledgerTriggers: false,
});

export const POSTGRES_CAPABILITIES: DbCapabilities = Object.freeze({
  singleProcess: false,
  setBasedSettlement: true,
  advisoryLocks: true,
  ledgerTriggers: true,
});

/**
 * The one seam between the store's SQL and a database engine. SQL is written once with `$1`-style
 * placeholders, integer milliseconds for time and integer micro-USD for money, so both engines run it.
 */
export interface Db {
  /** The engine's name, for reports (`/health`); decisions ask `capabilities`. */
  readonly dialect: 'sqlite' | 'postgres';
  readonly capabilities: DbCapabilities;
  /** All rows of a query. */
  all<T = Row>(sql: string, params?: readonly SqlParam[]): Promise<T[]>;
  /** The first row of a query, or undefined. */
  get<T = Row>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined>;
  /** Runs a statement; resolves to the number of rows it changed. */
  run(sql: string, params?: readonly SqlParam[]): Promise<number>;
  /**
   * The first row of a query, read synchronously: only engines that run in-process (SQLite) have it.
   * Inside this process it cannot interleave with other JavaScript, which makes check-and-reserve atomic.
   */
  readNow?<T = Row>(sql: string, params?: readonly SqlParam[]): T | undefined;
  /**
   * In-process engines only: a counter that moves whenever data changed (a statement or a transaction that
   * changed a row), so a value read with `readNow` can be reused while it stands still.
   */
  readonly writes?: number;
  /** Runs fn in one transaction; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T>;
  /** `FOR UPDATE` where the engine has row locks; empty where writers are serialized anyway. */
  readonly forUpdate: string;
  /** `FOR UPDATE SKIP LOCKED` for queue claims where the engine has it; empty where writers are serialized. */
  readonly skipLocked: string;
  /**
   * Told when the database stops answering (with the error) and when it answers again: once per change,
   * never per query. Engines that run in-process never call it.
   */
  onAvailability?: ((available: boolean, error?: unknown) => void) | undefined;
  /** Checks the connection; resolves to the round trip in milliseconds. */
  ping(): Promise<number>;
  /** Opens up to `connections` pooled connections now (engines with a pool), so first requests find them. */
  warm?(connections: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * The database cannot be reached (connection refused, lost or terminated, server shutting down): the
 * operation may succeed later. Requests answer 503 with Retry-After; queued work waits and is retried.
 */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
  constructor(cause: unknown) {
    super(`the database is unreachable: ${(cause as Error | undefined)?.message ?? String(cause)}`, {
      cause,
    });
  }
}
