import { KIND_COLUMNS_SQL, type KindCounts, kindCountsOf } from './token-counts.ts';
import type { Db, SqlParam } from './db.ts';

const DAY_MS = 86_400_000;

/** One day's totals over every account. */
export interface DayTotals {
  day: string;
  requests: number;
  tokens: number;
  spendMicros: number;
}

export interface FailingEndpoint {
  accountId: string;
  email: string;
  url: string;
  consecutiveFailures: number;
  lastError: string | null;
  lastAttemptAt: number | null;
  lastDeliveryId: string | null;
}

/** One usage record as the export streams it: never any request content. */
export interface ExportedUsage extends KindCounts {
  requestId: string;
  accountId: string;
  keyId: string;
  model: string;
  status: string;
  promptTokens: number;
  completionTokens: number;
  costMicros: number;
  createdAt: number;
}

const dayOf = (epochDay: number): string => new Date(epochDay * DAY_MS).toISOString().slice(0, 10);
const FAILED = '(d.status_code IS NULL OR d.status_code < 200 OR d.status_code >= 300)';

/** The operators' reports: statistics over time, the webhook backlog, the usage export. */
export class AdminReportsRepo {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  /** Per day: requests, tokens and spend over all accounts, from the day-keyed totals (only the days asked). */
  async dailyTotals(fromDay: string, toDay: string): Promise<DayTotals[]> {
    const rows = await this.#db.all<Record<string, string | number>>(
      `SELECT day, SUM(requests) AS requests, SUM(prompt_tokens + completion_tokens) AS tokens,
         SUM(cost_micros) AS spend FROM usage_daily_totals WHERE day >= $1 AND day <= $2 GROUP BY day ORDER BY day`,
      [fromDay, toDay],
    );
    return rows.map((row) => ({
      day: String(row['day']),
      requests: Number(row['requests']),
      tokens: Number(row['tokens']),
      spendMicros: Number(row['spend']),
    }));
  }

  /** Per day and model, or per day and plan (the account's plan when the usage was recorded). */
  async dailyBy(
    dimension: 'model' | 'plan',
    fromDay: string,
    toDay: string,
  ): Promise<(DayTotals & { key: string })[]> {
    const column = dimension === 'model' ? 'model' : 'plan';
    const rows = await this.#db.all<Record<string, string | number>>(
      `SELECT day, ${column} AS k, SUM(requests) AS requests, SUM(prompt_tokens + completion_tokens) AS tokens,
         SUM(cost_micros) AS spend FROM usage_daily_totals WHERE day >= $1 AND day <= $2 GROUP BY day, ${column}
       ORDER BY day, ${column}`,
      [fromDay, toDay],
    );
    return rows.map((row) => ({
      day: String(row['day']),
      key: String(row['k']),
      requests: Number(row['requests']),
      tokens: Number(row['tokens']),
      spendMicros: Number(row['spend']),
    }));
  }

  /** Per UTC day since `from`: settled (paid) orders' revenue and new accounts. */
  async revenueAndSignups(
    from: number,
  ): Promise<Map<string, { revenueMicros: number; newAccounts: number }>> {
    const revenue = await this.#db.all<{ d: number | string; amount: number | string }>(
      `SELECT completed_at / ${DAY_MS} AS d, SUM(amount_micros) AS amount FROM orders
       WHERE status = 'paid' AND completed_at >= $1 GROUP BY completed_at / ${DAY_MS}`,
      [from],
    );
    const signups = await this.#db.all<{ d: number | string; n: number | string }>(
      `SELECT created_at / ${DAY_MS} AS d, COUNT(*) AS n FROM accounts WHERE created_at >= $1
       GROUP BY created_at / ${DAY_MS}`,
      [from],
    );
    const days = new Map<string, { revenueMicros: number; newAccounts: number }>();
    const at = (d: number | string): { revenueMicros: number; newAccounts: number } => {
      const day = dayOf(Math.floor(Number(d)));
      let entry = days.get(day);
      if (!entry) days.set(day, (entry = { revenueMicros: 0, newAccounts: 0 }));
      return entry;
    };
    for (const row of revenue) at(row.d).revenueMicros += Number(row.amount);
    for (const row of signups) at(row.d).newAccounts += Number(row.n);
    return days;
  }

  /** Webhook events waiting to be delivered, given up, and the oldest waiting one's creation. */
  async webhookBacklog(): Promise<{ pending: number; failing: number; oldestPendingAt: number | null }> {
    const row = await this.#db.get<Record<string, number | string | null>>(
      `SELECT SUM(CASE WHEN status = 'pending' THEN 1 ELSE 0 END) AS pending,
         SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failing,
         MIN(CASE WHEN status = 'pending' THEN created_at END) AS oldest
       FROM webhook_events WHERE status IN ('pending', 'failed')`,
    );
    return {
      pending: Number(row?.['pending'] ?? 0),
      failing: Number(row?.['failing'] ?? 0),
      oldestPendingAt: row?.['oldest'] == null ? null : Number(row['oldest']),
    };
  }

  /** Endpoints whose latest deliveries failed: how many in a row since the last success, the latest one. */
  async failingEndpoints(limit: number): Promise<FailingEndpoint[]> {
    const rows = await this.#db.all<Record<string, string | number | null>>(
      `SELECT * FROM (
         SELECT e.account_id, a.email, e.url,
           (SELECT COUNT(*) FROM webhook_deliveries d WHERE d.account_id = e.account_id AND ${FAILED}
              AND d.created_at >= COALESCE((SELECT MAX(s.created_at) FROM webhook_deliveries s
                WHERE s.account_id = e.account_id AND s.status_code >= 200 AND s.status_code < 300), -1)
           ) AS failures,
           (SELECT d.id FROM webhook_deliveries d WHERE d.account_id = e.account_id AND ${FAILED}
              ORDER BY d.created_at DESC, d.attempt DESC LIMIT 1) AS last_id
         FROM webhook_endpoints e JOIN accounts a ON a.id = e.account_id
       ) f WHERE failures > 0 ORDER BY failures DESC, account_id LIMIT $1`,
      [limit],
    );
    const ids = rows.map((row) => row['last_id']).filter((id): id is string => typeof id === 'string');
    const last = new Map<string, { error: string | null; at: number; code: number | null }>();
    if (ids.length > 0) {
      const deliveries = await this.#db.all<Record<string, string | number | null>>(
        `SELECT id, error, status_code, created_at FROM webhook_deliveries
         WHERE id IN (${ids.map((_, i) => `$${i + 1}`).join(', ')})`,
        ids,
      );
      for (const d of deliveries)
        last.set(String(d['id']), {
          error: d['error'] === null ? null : String(d['error']),
          at: Number(d['created_at']),
          code: d['status_code'] === null ? null : Number(d['status_code']),
        });
    }
    return rows.map((row) => {
      const id = typeof row['last_id'] === 'string' ? row['last_id'] : null;
      const found = id === null ? undefined : last.get(id);
      return {
        accountId: String(row['account_id']),
        email: String(row['email']),
        url: String(row['url']),
        consecutiveFailures: Number(row['failures']),
        lastError: found ? (found.error ?? (found.code === null ? null : `status ${found.code}`)) : null,
        lastAttemptAt: found ? found.at : null,
        lastDeliveryId: id,
      };
    });
  }

  /** The account a delivery (of any account) belongs to: the operator's redelivery goes through it. */
  async deliveryAccount(id: string): Promise<string | undefined> {
    const row = await this.#db.get<{ account_id: string }>(
      'SELECT account_id FROM webhook_deliveries WHERE id = $1',
      [id],
    );
    return row?.account_id;
  }

  /**
   * Up to `limit` usage records created in [from, to), oldest first, after the cursor (created_at, request id):
   * the export reads these pages one after another, so memory stays one page however long the range. The cursor
   * is a row-value comparison on an index that ends with (created_at, request_id) — the key over everything,
   * (account_id, created_at, request_id) for one account — so each page starts where the last one stopped
   * instead of rereading the range before it.
   */
  async usagePage(
    range: { from: number; to: number; accountId?: string },
    after: { createdAt: number; requestId: string } | undefined,
    limit: number,
  ): Promise<ExportedUsage[]> {
    const params: SqlParam[] = [range.from, range.to, limit];
    let where = 'created_at >= $1 AND created_at < $2';
    if (range.accountId !== undefined) {
      params.push(range.accountId);
      where += ` AND account_id = $${params.length}`;
    }
    if (after) {
      params.push(after.createdAt, after.requestId);
      const [at, id] = [`$${params.length - 1}`, `$${params.length}`];
      where += ` AND (created_at, request_id) > (${at}, ${id})`;
    }
    const rows = await this.#db.all<Record<string, string | number>>(
      `SELECT request_id, account_id, key_id, model, status, prompt_tokens, completion_tokens, cost_micros,
         created_at, ${KIND_COLUMNS_SQL} FROM usage_records WHERE ${where} ORDER BY created_at, request_id LIMIT $3`,
      params,
    );
    return rows.map((row) => ({
      requestId: String(row['request_id']),
      accountId: String(row['account_id']),
      keyId: String(row['key_id']),
      model: String(row['model']),
      status: String(row['status']),
      promptTokens: Number(row['prompt_tokens']),
      completionTokens: Number(row['completion_tokens']),
      costMicros: Number(row['cost_micros']),
      createdAt: Number(row['created_at']),
      ...kindCountsOf(row),
    }));
  }
}
