// Seeds months of history into a migrated database in a few set-based statements: accounts with two keys and a
// credit grant each, usage records spread evenly over the days asked (one heavy account takes a fixed share,
// the rest fall on the others with a long tail), and the rollups and ledger those records imply, consistent to
// the row and the µUSD. Deterministic: the same arguments give the same data.
import type { Db } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';

const DAY_MS = 86_400_000;
/** Records per statement: one statement's sort and index work stays in memory. */
const CHUNK = 500_000;
const SQLITE_CHUNK = 50_000;

export interface SeedOptions {
  records: number;
  accounts: number;
  /** Days of history ending at `now` (90 by default). */
  days?: number;
  now?: number;
  /** The heavy account's share of the records, in thousandths (128 by default: 1.28M of 10M). */
  heavyPermille?: number;
  /**
   * Records' times are whole multiples of this (1000 ms by default), so that several records share a time as
   * they do under load; a test that needs many equal times makes it larger.
   */
  tickMs?: number;
  /** Told about progress (records inserted so far). */
  progress?: (done: number, total: number) => void;
  /** Told each step's name and seconds. */
  log?: (line: string) => void;
}

export interface SeedResult {
  accounts: number;
  keys: number;
  records: number;
  /** The heavy account (most records) and how many it has. */
  heavyAccountId: string;
  heavyRecords: number;
  from: number;
  to: number;
  /** Per UTC day: records seeded (what the operator statistics must report). */
  perDay: Map<string, number>;
  seconds: number;
}

/** The SQL that differs between the engines: a series of integers, hex text, a day's name. */
interface Dialect {
  /** A statement inserting `select` (over `s(g)`, g from $1 to $2) into `target`. */
  insertSeries(target: string, select: string): string;
  hex16(expr: string): string;
  dayName(epochDay: string): string;
  chunk: number;
}

const POSTGRES: Dialect = {
  insertSeries: (target, select) =>
    `INSERT INTO ${target} ${select.replace('FROM s', 'FROM generate_series(CAST($1 AS BIGINT), CAST($2 AS BIGINT)) AS s(g)')}`,
  hex16: (expr) => `lpad(to_hex(${expr}), 16, '0')`,
  dayName: (d) => `to_char(to_timestamp(${d} * 86400) AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
  chunk: CHUNK,
};

const SQLITE: Dialect = {
  insertSeries: (target, select) =>
    `WITH RECURSIVE s(g) AS (SELECT CAST($1 AS INTEGER) UNION ALL SELECT g + 1 FROM s WHERE g < $2) INSERT INTO ${target} ${select}`,
  hex16: (expr) => `printf('%016x', ${expr})`,
  dayName: (d) => `strftime('%Y-%m-%d', ${d} * 86400, 'unixepoch')`,
  chunk: SQLITE_CHUNK,
};

/**
 * Runs `fill` with the table's indexes other than its primary key dropped, then creates them again from their
 * own definitions: one sorted build each instead of an index insert per row.
 */
async function withoutSecondaryIndexes(tx: Db, table: string, fill: () => Promise<unknown>): Promise<void> {
  const indexes =
    tx.dialect === 'postgres'
      ? await tx.all<{ name: string; sql: string }>(
          `SELECT indexname AS name, indexdef AS sql FROM pg_indexes
           WHERE schemaname = current_schema() AND tablename = $1
             AND indexname NOT IN (SELECT conname FROM pg_constraint)`,
          [table],
        )
      : await tx.all<{ name: string; sql: string }>(
          "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = $1 AND sql IS NOT NULL",
          [table],
        );
  for (const index of indexes) await tx.run(`DROP INDEX ${index.name}`);
  await fill();
  for (const index of indexes) await tx.run(index.sql);
}

export const accountIdOf = (index: number): string => `acct_${index.toString(16).padStart(16, '0')}`;

export async function seedHistory(db: Db, options: SeedOptions): Promise<SeedResult> {
  const started = performance.now();
  const records = options.records;
  const accounts = options.accounts;
  if (!Number.isInteger(records) || records < 1) throw new Error('--records must be a whole number ≥ 1');
  if (!Number.isInteger(accounts) || accounts < 2) throw new Error('--accounts must be a whole number ≥ 2');
  const days = options.days ?? 90;
  const now = options.now ?? Date.now();
  const heavy = options.heavyPermille ?? 128;
  const tick = options.tickMs ?? 1000;
  const to = Math.floor(now / tick) * tick;
  const from = to - days * DAY_MS;
  const span = to - from;
  const sql = db.dialect === 'postgres' ? POSTGRES : SQLITE;
  let mark = performance.now();
  const step = (name: string): void => {
    const at = performance.now();
    options.log?.(`${name}: ${((at - mark) / 1000).toFixed(1)} s`);
    mark = at;
  };
  await migrate(db);

  const others = accounts - 1;
  await db.run(
    sql.insertSeries(
      `accounts (id, email, password_hash, email_verified, plan, created_at, last_active_at)`,
      `SELECT 'acct_' || ${sql.hex16('g')}, 'seed' || g || '@example.com', 'seed', CASE WHEN g % 10 < 7 THEN 1 ELSE 0 END,
         CASE WHEN g = 0 THEN 'enterprise' WHEN g % 20 < 14 THEN 'free_trial' WHEN g % 20 < 18 THEN 'starter' ELSE 'pro' END,
         ${from} - (g % 365) * ${DAY_MS}, NULL FROM s`,
    ),
    [0, accounts - 1],
  );
  await db.run(
    sql.insertSeries(
      `api_keys (id, account_id, name, prefix, secret_hash, status, created_at)`,
      `SELECT 'key_' || ${sql.hex16('g')}, 'acct_' || ${sql.hex16('g / 2')}, 'seeded', 'tg_seed', 'seed' || g, 'active',
         ${from} - ((g / 2) % 365) * ${DAY_MS} FROM s`,
    ),
    [0, 2 * accounts - 1],
  );

  step('accounts and keys');
  // Each record from its index g alone: h is a 32-bit hash of g; a the account (0 is the heavy one, the others
  // skewed towards low indexes by squaring a uniform draw), the key one of the account's two.
  const hashed = `SELECT g, h, CASE WHEN h % 1000 < ${heavy} THEN 0
      ELSE 1 + ((h / 1000) % ${others}) * ((h / 1000) % ${others}) / ${others} END AS a
    FROM (SELECT g, (g * 2654435761) % 4294967296 AS h FROM s) AS hs`;
  const recordSelect = `SELECT ${from} + (g * ${span} / ${records}) / ${tick} * ${tick},
      CASE WHEN h % 50 = 0 THEN 0 ELSE (20 + (h / 7) % 3000 + 4 * (5 + (h / 13) % 900)) / 5 END, 0,
      20 + (h / 7) % 3000, CASE WHEN h % 50 = 0 THEN 0 ELSE 5 + (h / 13) % 900 END,
      200 + h % 5000, CASE WHEN h % 50 = 0 THEN NULL ELSE 50 + h % 700 END, 0,
      'req_' || ${sql.hex16('h * 1000000000 + g')}, 'acct_' || ${sql.hex16('a')}, 'key_' || ${sql.hex16('a * 2 + g % 2')},
      CASE (h / 17) % 10 WHEN 0 THEN 'model-a' WHEN 1 THEN 'model-c' WHEN 2 THEN 'model-c' WHEN 3 THEN 'model-d'
        WHEN 4 THEN 'model-e' WHEN 5 THEN 'model-f' ELSE 'model-b' END,
      CASE WHEN h % 50 = 0 THEN 'error' ELSE 'ok' END, 'simulator'
    FROM (${hashed}) AS r`;
  for (let first = 0; first < records; first += sql.chunk) {
    const last = Math.min(records, first + sql.chunk) - 1;
    await db.run(
      sql.insertSeries(
        `usage_records (created_at, cost_micros, uncollected_micros, prompt_tokens, completion_tokens, latency_ms,
           ttft_ms, estimated, request_id, account_id, key_id, model, status, deployment)`,
        recordSelect,
      ),
      [first, last],
    );
    options.progress?.(last + 1, records);
  }

  step('usage records');
  // The rollups, activity and ledger the records imply, in one transaction (the ledger triggers stay quiet:
  // nothing here moves a balance an instance could hold).
  await db.transaction(async (tx) => {
    if (db.dialect === 'postgres') {
      await tx.run("SET LOCAL tollgate.settling = 'on'");
      await tx.run("SET LOCAL work_mem = '256MB'");
    }
    await tx.run('DROP TABLE IF EXISTS seed_daily');
    step('(transaction)');
    await tx.run(
      `CREATE TEMP TABLE seed_daily AS
       SELECT created_at / ${DAY_MS} AS d, account_id, key_id, model, COUNT(*) AS requests,
         SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens,
         SUM(cost_micros) AS cost_micros, MAX(CASE WHEN status = 'ok' THEN created_at END) AS last_ok
       FROM usage_records GROUP BY created_at / ${DAY_MS}, account_id, key_id, model`,
    );
    // In key order, with the secondary indexes built afterwards (sorted) rather than row by row.
    await withoutSecondaryIndexes(tx, 'usage_daily', () =>
      tx.run(
        `INSERT INTO usage_daily (day, account_id, key_id, model, requests, prompt_tokens, completion_tokens, cost_micros)
         SELECT ${sql.dayName('d')}, account_id, key_id, model, requests, prompt_tokens, completion_tokens, cost_micros
         FROM seed_daily ORDER BY d, account_id, key_id, model`,
      ),
    );
    step('per day, account, key and model');
    await tx.run('DROP TABLE IF EXISTS seed_accounts');
    await tx.run(
      `CREATE TEMP TABLE seed_accounts AS SELECT account_id, MAX(last_ok) AS last_ok, SUM(cost_micros) AS spent
       FROM seed_daily GROUP BY account_id`,
    );
    await tx.run(
      `UPDATE accounts SET last_active_at = seed_accounts.last_ok FROM seed_accounts
       WHERE accounts.id = seed_accounts.account_id`,
    );
    // Each account was granted what it spent plus 10 USD: what is left is exactly 10 USD.
    await tx.run(
      `INSERT INTO credit_grants (id, account_id, kind, amount_micros, remaining_micros, expires_at, created_at, source)
       SELECT 'grant_' || substr(a.id, 6), a.id, 'admin', 10000000 + COALESCE(u.spent, 0), 10000000,
         ${to + 365 * DAY_MS}, a.created_at, 'seed'
       FROM accounts a LEFT JOIN seed_accounts u ON u.account_id = a.id WHERE a.password_hash = 'seed'`,
    );
    await tx.run('DROP TABLE seed_daily');
    await tx.run('DROP TABLE seed_accounts');
  });
  await db.run('ANALYZE');

  step('rollups, activity, grants, analyze');
  const perDayRows = await db.all<{ day: string; n: number | string }>(
    'SELECT day, SUM(requests) AS n FROM usage_daily_totals GROUP BY day ORDER BY day',
  );
  const heavyRow = await db.get<{ n: number | string }>(
    'SELECT SUM(requests) AS n FROM usage_daily WHERE account_id = $1',
    [accountIdOf(0)],
  );
  return {
    accounts,
    keys: accounts * 2,
    records,
    heavyAccountId: accountIdOf(0),
    heavyRecords: Number(heavyRow?.n ?? 0),
    from,
    to,
    perDay: new Map(perDayRows.map((row) => [row.day, Number(row.n)])),
    seconds: (performance.now() - started) / 1000,
  };
}
