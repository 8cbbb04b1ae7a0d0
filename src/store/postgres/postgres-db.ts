import pg from 'pg';
import { type Db, POSTGRES_CAPABILITIES, type SqlParam, StoreUnavailableError } from '../db.ts';

// BIGINT (int8) carries milliseconds and micro-USD, all far below 2^53: read them as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export interface PostgresOptions {
  connectionString: string;
  /** A schema to create if missing and put first on the search path (tests use one each). */
  schema?: string;
  maxConnections?: number;
  /** How long to wait for a connection (a new one, or a free one of the pool) before answering 503. */
  connectionTimeoutMs?: number;
  /** Shown in pg_stat_activity (tests find their own connections by it). */
  applicationName?: string;
}

/** Connects a pool to PostgreSQL. */
export function createPostgresDb(options: PostgresOptions): Db {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 10,
    // Without a limit, a request waits for an unreachable server as long as the operating system lets it.
    // The limit also bounds the wait for a free client under load, so it is generous: past it, 503.
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 10_000,
    application_name: options.applicationName ?? 'tollgate',
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  });
  // A connection's errors are handled where it is created. An idle client's error (the server restarted,
  // pg_terminate_backend) reaches the pool, which replaces the client. Every client also keeps a listener of
  // its own for its whole life: pg emits an error that arrives between queries (the server's "terminating
  // connection" notice) on the client, checked out or already released for destruction, and an 'error'
  // with no listener ends the process. Queries still fail through their own promise.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return new PostgresDb(pool, pool, { down: false, db: undefined });
}

/**
 * Connection-level failures: the server could not be reached or dropped the connection, or is shutting
 * down (SQLSTATE class 08, 57P01-57P03). Anything else (a constraint, a syntax error) is the query's own.
 */
function isConnectionError(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03') return true;
    if (/^E(CONNREFUSED|CONNRESET|PIPE|HOSTUNREACH|NETUNREACH|TIMEDOUT|AI_AGAIN)$/.test(code)) return true;
  }
  return (
    typeof message === 'string' &&
    /Connection terminated|timeout exceeded when trying to connect|not queryable|Connection closed/i.test(
      message,
    )
  );
}

/** Whether the server answers, shared by the pool and its transactions: availability changes are told once. */
interface Availability {
  down: boolean;
  db: PostgresDb | undefined;
}

type Queryable = pg.Pool | pg.PoolClient;

class PostgresDb implements Db {
  readonly dialect = 'postgres';
  readonly capabilities = POSTGRES_CAPABILITIES;
  readonly forUpdate = 'FOR UPDATE';
  readonly skipLocked = 'FOR UPDATE SKIP LOCKED';
  onAvailability: ((available: boolean, error?: unknown) => void) | undefined;
  readonly #client: Queryable;
  readonly #pool: pg.Pool;
  readonly #availability: Availability;

  constructor(client: Queryable, pool: pg.Pool, availability: Availability) {
    this.#client = client;
    this.#pool = pool;
    this.#availability = availability;
    availability.db ??= this;
  }

  async #query(sql: string, params: readonly SqlParam[]): Promise<pg.QueryResult> {
    try {
      const result = await this.#client.query(sql, params as SqlParam[]);
      if (this.#availability.down) this.#available(true);
      return result;
    } catch (error) {
      throw this.#failure(error);
    }
  }

  /** A connection failure becomes StoreUnavailableError (told once per outage); others pass unchanged. */
  #failure(error: unknown): unknown {
    if (error instanceof StoreUnavailableError || !isConnectionError(error)) return error;
    if (!this.#availability.down) this.#available(false, error);
    return new StoreUnavailableError(error);
  }

  #available(available: boolean, error?: unknown): void {
    this.#availability.down = !available;
    this.#availability.db?.onAvailability?.(available, error);
  }

  async all<T>(sql: string, params: readonly SqlParam[] = []): Promise<T[]> {
    return (await this.#query(sql, params)).rows as T[];
  }

  async get<T>(sql: string, params: readonly SqlParam[] = []): Promise<T | undefined> {
    return (await this.#query(sql, params)).rows[0] as T | undefined;
  }

  async run(sql: string, params: readonly SqlParam[] = []): Promise<number> {
    return (await this.#query(sql, params)).rowCount ?? 0;
  }

  async transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
    if (!(this.#client instanceof pg.Pool)) return fn(this);
    let client: pg.PoolClient;
    try {
      client = await this.#client.connect();
    } catch (error) {
      throw this.#failure(error);
    }
    // A connection lost while the client is out (the server stopped, pg_terminate_backend) makes the query
    // in progress fail; the client is then destroyed on release instead of going back to the pool.
    let broken: Error | undefined;
    const onError = (error: Error): void => void (broken ??= error);
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      const result = await fn(new PostgresDb(client, this.#pool, this.#availability));
      await client.query('COMMIT');
      return result;
    } catch (error) {
      const failure = this.#failure(error);
      if (failure instanceof StoreUnavailableError) broken ??= failure;
      else await client.query('ROLLBACK').catch(() => {});
      throw failure;
    } finally {
      client.off('error', onError);
      client.release(broken ?? false);
    }
  }

  async ping(): Promise<number> {
    const started = performance.now();
    await this.#query('SELECT 1', []);
    return performance.now() - started;
  }

  async warm(connections: number): Promise<void> {
    const pool = this.#pool;
    const clients = await Promise.all(
      Array.from({ length: Math.min(connections, pool.options.max) }, () => pool.connect()),
    );
    await Promise.all(clients.map((client) => client.query('SELECT 1')));
    for (const client of clients) client.release();
  }

  async close(): Promise<void> {
    if (this.#client instanceof pg.Pool) await this.#client.end();
  }
}
