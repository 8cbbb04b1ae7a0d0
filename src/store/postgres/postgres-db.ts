import pg from 'pg';
import type { Db, SqlParam } from '../db.ts';

// BIGINT (int8) carries milliseconds and micro-USD, all far below 2^53: read them as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export interface PostgresOptions {
  connectionString: string;
  /** A schema to create if missing and put first on the search path (tests use one each). */
  schema?: string;
  maxConnections?: number;
}

/** Connects a pool to PostgreSQL. */
export function createPostgresDb(options: PostgresOptions): Db {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 10,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  });
  // An idle client's error (the server restarted) must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  return new PostgresDb(pool);
}

type Queryable = pg.Pool | pg.PoolClient;

class PostgresDb implements Db {
  readonly dialect = 'postgres';
  readonly forUpdate = 'FOR UPDATE';
  readonly skipLocked = 'FOR UPDATE SKIP LOCKED';
  readonly #client: Queryable;
  readonly #pool: pg.Pool | undefined;

  constructor(client: Queryable, pool?: pg.Pool) {
    this.#client = client;
    this.#pool = client instanceof pg.Pool ? client : pool;
  }

  async all<T>(sql: string, params: readonly SqlParam[] = []): Promise<T[]> {
    const result = await this.#client.query(sql, params as SqlParam[]);
    return result.rows as T[];
  }

  async get<T>(sql: string, params: readonly SqlParam[] = []): Promise<T | undefined> {
    const result = await this.#client.query(sql, params as SqlParam[]);
    return result.rows[0] as T | undefined;
  }

  async run(sql: string, params: readonly SqlParam[] = []): Promise<number> {
    const result = await this.#client.query(sql, params as SqlParam[]);
    return result.rowCount ?? 0;
  }

  async transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
    if (!(this.#client instanceof pg.Pool)) return fn(this);
    const client = await this.#client.connect();
    try {
      await client.query('BEGIN');
      const result = await fn(new PostgresDb(client, this.#pool));
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  async ping(): Promise<number> {
    const started = performance.now();
    await this.#client.query('SELECT 1');
    return performance.now() - started;
  }

  async close(): Promise<void> {
    if (this.#client instanceof pg.Pool) await this.#client.end();
  }
}
