import type { Db } from './db.ts';
import { DAY_MS } from '../core/time.ts';
import { KIND_COLUMNS_SQL, KIND_SUMS_SQL, type KindCounts, kindCountsOf } from './token-counts.ts';

export type UsageGroup = 'day' | 'model' | 'key';

export interface UsageRow extends KindCounts {
  group: string;
  requests: number;
  promptTokens: number;
  completionTokens: number;
  costMicros: number;
}

export interface StatsCounts {
  totalUsers: number;
  verifiedUsers: number;
  activeUsers7d: number;
  activeUsers30d: number;
  paidUsers: number;
  todayTokens: number;
  todayCostMicros: number;
}

const GROUP_COLUMN: Record<UsageGroup, string> = { day: 'day', model: 'model', key: 'key_id' };

/** Usage records, the daily rollup they feed, statistics over it, and retention. */
/** One day and model of an account's usage. */
export interface DayModelRow {
  day: string;
  model: string;
  requests: number;
  tokens: number;
  costMicros: number;
}

/** One request as the dashboard's recent-requests table shows it. */
export interface RecentRequest extends KindCounts {
  requestId: string;
  keyId: string;
  model: string;
  promptTokens: number;
  completionTokens: number;
  costMicros: number;
  status: string;
  latencyMs: number;
  createdAt: number;
}

export class UsageRepo {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  /** The account's usage between two UTC days (inclusive), from the rollup. */
  async summary(accountId: string, fromDay: string, toDay: string, groupBy: UsageGroup): Promise<UsageRow[]> {
    const column = GROUP_COLUMN[groupBy];
    const rows = await this.#db.all<{
      g: string;
      requests: number;
      prompt: number;
      completion: number;
      cost: number;
    }>(
      `SELECT ${column} AS g, CAST(SUM(requests) AS BIGINT) AS requests, CAST(SUM(prompt_tokens) AS BIGINT) AS prompt,
              CAST(SUM(completion_tokens) AS BIGINT) AS completion, CAST(SUM(cost_micros) AS BIGINT) AS cost,
              ${KIND_SUMS_SQL}
       FROM usage_daily WHERE account_id = $1 AND day >= $2 AND day <= $3 GROUP BY ${column} ORDER BY ${column}`,
      [accountId, fromDay, toDay],
    );
    return rows.map((row) => ({
      group: row.g,
      requests: Number(row.requests),
      promptTokens: Number(row.prompt),
      completionTokens: Number(row.completion),
      costMicros: Number(row.cost),
      ...kindCountsOf(row),
    }));
  }

  /** Tokens the account used on a UTC day. */
  async dayTokens(accountId: string, day: string): Promise<number> {
    const row = await this.#db.get<{ n: number | null }>(
      'SELECT CAST(SUM(prompt_tokens + completion_tokens) AS BIGINT) AS n FROM usage_daily WHERE account_id = $1 AND day = $2',
      [accountId, day],
    );
    return Number(row?.n ?? 0);
  }

  /**
   * Tokens used on a UTC day under a key's rate-limit windows (seeds the daily cap after a restart): the keys
   * whose limit subject it is, the key of that id among them.
   */
  async keyDayTokens(subject: string, day: string): Promise<number> {
    const row = await this.#db.get<{ n: number | null }>(
      `SELECT CAST(SUM(prompt_tokens + completion_tokens) AS BIGINT) AS n FROM usage_daily
       WHERE day = $2 AND key_id IN (SELECT id FROM api_keys WHERE id = $1 OR limit_subject = $1)`,
      [subject, day],
    );
    return Number(row?.n ?? 0);
  }

  /** When each of these keys last had a request recorded (ms since epoch); a key never used is absent. */
  async lastUsed(keyIds: readonly string[]): Promise<Map<string, number>> {
    // One indexed lookup per key (usage_records_key): an account has few keys, and MAX over the
    // (key_id, created_at) index reads one entry however many records the key has.
    const found = new Map<string, number>();
    for (const keyId of keyIds) {
      const row = await this.#db.get<{ at: number | null }>(
        'SELECT MAX(created_at) AS at FROM usage_records WHERE key_id = $1',
        [keyId],
      );
      if (row?.at != null) found.set(keyId, Number(row.at));
    }
    return found;
  }

  /** The spec's statistics, from indexed columns and one day of rollup: independent of how many records exist. */
  async stats(now: number, paidPlans: readonly string[]): Promise<StatsCounts> {
    const placeholders = paidPlans.map((_, index) => `$${index + 4}`).join(', ') || 'NULL';
    const users = await this.#db.get<{
      total: number;
      verified: number;
      a7: number;
      a30: number;
      paid: number;
    }>(
      `SELECT COUNT(*) AS total,
              COALESCE(SUM(CASE WHEN email_verified = 1 THEN 1 ELSE 0 END), 0) AS verified,
              COALESCE(SUM(CASE WHEN last_active_at >= $1 THEN 1 ELSE 0 END), 0) AS a7,
              COALESCE(SUM(CASE WHEN last_active_at >= $2 THEN 1 ELSE 0 END), 0) AS a30,
              COALESCE(SUM(CASE WHEN plan IN (${placeholders}) AND (plan_expires_at IS NULL OR plan_expires_at > $3) THEN 1 ELSE 0 END), 0) AS paid
       FROM accounts`,
      [now - 7 * DAY_MS, now - 30 * DAY_MS, now, ...paidPlans],
    );
    const today = await this.#db.get<{ tokens: number | null; cost: number | null }>(
      `SELECT CAST(SUM(prompt_tokens + completion_tokens) AS BIGINT) AS tokens, CAST(SUM(cost_micros) AS BIGINT) AS cost
       FROM usage_daily_totals WHERE day = $1`,
      [new Date(now).toISOString().slice(0, 10)],
    );
    return {
      totalUsers: Number(users?.total ?? 0),
      verifiedUsers: Number(users?.verified ?? 0),
      activeUsers7d: Number(users?.a7 ?? 0),
      activeUsers30d: Number(users?.a30 ?? 0),
      paidUsers: Number(users?.paid ?? 0),
      todayTokens: Number(today?.tokens ?? 0),
      todayCostMicros: Number(today?.cost ?? 0),
    };
  }

  /** Deletes up to `batchSize` usage records created before `cutoff`; returns how many went. */
  async deleteRecordsBefore(cutoff: number, batchSize: number): Promise<number> {
    return this.#db.run(
      'DELETE FROM usage_records WHERE request_id IN (SELECT request_id FROM usage_records WHERE created_at < $1 LIMIT $2)',
      [cutoff, batchSize],
    );
  }

  async recordCount(accountId?: string): Promise<number> {
    const row = accountId
      ? await this.#db.get<{ n: number }>('SELECT COUNT(*) AS n FROM usage_records WHERE account_id = $1', [
          accountId,
        ])
      : await this.#db.get<{ n: number }>('SELECT COUNT(*) AS n FROM usage_records');
    return Number(row?.n ?? 0);
  }

  async record(requestId: string): Promise<Record<string, unknown> | undefined> {
    return this.#db.get('SELECT * FROM usage_records WHERE request_id = $1', [requestId]);
  }
  /** The account's most recent requests, newest first (counts only: request content is never stored). */
  async recent(accountId: string, limit: number): Promise<RecentRequest[]> {
    const rows = await this.#db.all<{
      request_id: string;
      key_id: string;
      model: string;
      prompt_tokens: number;
      completion_tokens: number;
      cost_micros: number;
      status: string;
      latency_ms: number;
      created_at: number;
    }>(
      `SELECT request_id, key_id, model, prompt_tokens, completion_tokens, cost_micros, status, latency_ms, created_at,
         ${KIND_COLUMNS_SQL}
       FROM usage_records WHERE account_id = $1 ORDER BY created_at DESC, request_id LIMIT $2`,
      [accountId, limit],
    );
    return rows.map((row) => ({
      requestId: row.request_id,
      keyId: row.key_id,
      model: row.model,
      promptTokens: Number(row.prompt_tokens),
      completionTokens: Number(row.completion_tokens),
      costMicros: Number(row.cost_micros),
      status: row.status,
      latencyMs: Number(row.latency_ms),
      createdAt: Number(row.created_at),
      ...kindCountsOf(row),
    }));
  }
  /** The account's cost and tokens per UTC day and model between two days (inclusive): the overview's chart. */
  async dailyByModel(accountId: string, fromDay: string, toDay: string): Promise<DayModelRow[]> {
    const rows = await this.#db.all<{
      day: string;
      model: string;
      requests: number;
      tokens: number;
      cost: number;
    }>(
      `SELECT day, model, CAST(SUM(requests) AS BIGINT) AS requests,
              CAST(SUM(prompt_tokens + completion_tokens) AS BIGINT) AS tokens, CAST(SUM(cost_micros) AS BIGINT) AS cost
       FROM usage_daily WHERE account_id = $1 AND day >= $2 AND day <= $3 GROUP BY day, model ORDER BY day, model`,
      [accountId, fromDay, toDay],
    );
    return rows.map((row) => ({
      day: row.day,
      model: row.model,
      requests: Number(row.requests),
      tokens: Number(row.tokens),
      costMicros: Number(row.cost),
    }));
  }
}
