import type { Db } from './db.ts';
import type { CreditGrant, GrantKind, Settlement } from './records.ts';

interface GrantRow {
  id: string;
  account_id: string;
  kind: GrantKind;
  amount_micros: number;
  remaining_micros: number;
  expires_at: number;
  created_at: number;
  source: string | null;
}

const toGrant = (row: GrantRow): CreditGrant => ({
  id: row.id,
  accountId: row.account_id,
  kind: row.kind,
  amountMicros: row.amount_micros,
  remainingMicros: row.remaining_micros,
  expiresAt: row.expires_at,
  createdAt: row.created_at,
  source: row.source,
});

export interface Balance {
  /** Unexpired credit still unspent. */
  creditMicros: number;
  /** Reserved by requests in flight. */
  heldMicros: number;
  /** Owed by a postpaid account beyond its credit. */
  debtMicros: number;
  creditLimitMicros: number;
  /** What a new request may still reserve: credit − held − debt + credit limit. */
  availableMicros: number;
}

/** UTC calendar day of a time in ms, as `YYYY-MM-DD`. */
export const utcDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** Credit grants, holds and settlement: the money. Every method keeps credit − held − debt consistent. */
export class LedgerRepo {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  async addGrant(grant: CreditGrant): Promise<void> {
    await this.#db.run(
      `INSERT INTO credit_grants (id, account_id, kind, amount_micros, remaining_micros, expires_at, created_at, source)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        grant.id,
        grant.accountId,
        grant.kind,
        grant.amountMicros,
        grant.remainingMicros,
        grant.expiresAt,
        grant.createdAt,
        grant.source,
      ],
    );
  }

  /** Unexpired grants, soonest expiry first (the order usage draws them in). */
  async liveGrants(accountId: string, now: number): Promise<CreditGrant[]> {
    const rows = await this.#db.all<GrantRow>(
      'SELECT * FROM credit_grants WHERE account_id = $1 AND expires_at > $2 ORDER BY expires_at, created_at, id',
      [accountId, now],
    );
    return rows.map(toGrant);
  }

  async balance(accountId: string, now: number): Promise<Balance> {
    const row = await this.#db.get<{
      credit: number | null;
      held: number;
      debt: number;
      credit_limit: number;
    }>(
      `SELECT (SELECT CAST(SUM(remaining_micros) AS BIGINT) FROM credit_grants WHERE account_id = $1 AND expires_at > $2) AS credit,
              held_micros AS held, debt_micros AS debt, credit_limit_micros AS credit_limit
       FROM accounts WHERE id = $1`,
      [accountId, now],
    );
    const creditMicros = Number(row?.credit ?? 0);
    const heldMicros = row?.held ?? 0;
    const debtMicros = row?.debt ?? 0;
    const creditLimitMicros = row?.credit_limit ?? 0;
    return {
      creditMicros,
      heldMicros,
      debtMicros,
      creditLimitMicros,
      availableMicros: creditMicros - heldMicros - debtMicros + creditLimitMicros,
    };
  }

  /**
   * Reserves `amountMicros` for a request if the account can still afford it; false (and nothing taken) if not.
   * The account row is locked first, so concurrent holds see each other and never exceed the balance.
   */
  async hold(
    requestId: string,
    accountId: string,
    amountMicros: number,
    now: number,
    expiresAt: number,
  ): Promise<boolean> {
    return this.#db.transaction(async (tx) => {
      const account = await tx.get<{ held: number; debt: number; credit_limit: number }>(
        `SELECT held_micros AS held, debt_micros AS debt, credit_limit_micros AS credit_limit FROM accounts WHERE id = $1 ${tx.forUpdate}`,
        [accountId],
      );
      if (!account) return false;
      const credit = await tx.get<{ s: number | null }>(
        'SELECT CAST(SUM(remaining_micros) AS BIGINT) AS s FROM credit_grants WHERE account_id = $1 AND expires_at > $2',
        [accountId, now],
      );
      const available = Number(credit?.s ?? 0) - account.held - account.debt + account.credit_limit;
      if (available < amountMicros || available <= 0) return false;
      await tx.run('UPDATE accounts SET held_micros = held_micros + $2 WHERE id = $1', [
        accountId,
        amountMicros,
      ]);
      await tx.run(
        'INSERT INTO holds (request_id, account_id, amount_micros, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)',
        [requestId, accountId, amountMicros, now, expiresAt],
      );
      return true;
    });
  }

  /**
   * Applies finished requests in one transaction: releases each hold, charges the actual cost against the
   * grants that expire first, records usage and the daily rollup. A request id already settled changes nothing.
   */
  async settle(settlements: readonly Settlement[]): Promise<void> {
    if (settlements.length === 0) return;
    // One lock order (by account) for every batch, so concurrent batches on PostgreSQL cannot deadlock.
    const ordered = [...settlements].sort((a, b) =>
      a.accountId < b.accountId ? -1 : a.accountId > b.accountId ? 1 : 0,
    );
    await this.#db.transaction(async (tx) => {
      for (const settlement of ordered) await settleOne(tx, settlement);
    });
  }

  /** Releases holds whose request can no longer settle (its instance died); returns how many. */
  async releaseExpiredHolds(now: number): Promise<number> {
    return this.#db.transaction(async (tx) => {
      const holds = await tx.all<{ request_id: string; account_id: string; amount_micros: number }>(
        'SELECT request_id, account_id, amount_micros FROM holds WHERE expires_at <= $1 ORDER BY account_id',
        [now],
      );
      for (const hold of holds) await releaseHold(tx, hold.request_id);
      return holds.length;
    });
  }

  async openHolds(accountId: string): Promise<number> {
    const row = await this.#db.get<{ n: number }>('SELECT COUNT(*) AS n FROM holds WHERE account_id = $1', [
      accountId,
    ]);
    return Number(row?.n ?? 0);
  }
}

/** Deletes a hold and gives its amount back; 0 if there was none. */
async function releaseHold(tx: Db, requestId: string): Promise<number> {
  const hold = await tx.get<{ account_id: string; amount_micros: number }>(
    'DELETE FROM holds WHERE request_id = $1 RETURNING account_id, amount_micros',
    [requestId],
  );
  if (!hold) return 0;
  await tx.run('UPDATE accounts SET held_micros = held_micros - $2 WHERE id = $1', [
    hold.account_id,
    hold.amount_micros,
  ]);
  return hold.amount_micros;
}

async function settleOne(tx: Db, s: Settlement): Promise<void> {
  // The record goes first: a request id settled before (a retried batch, a replay) stops here, charging nothing.
  const inserted = await tx.run(
    `INSERT INTO usage_records (request_id, account_id, key_id, model, deployment, prompt_tokens, completion_tokens, estimated,
       cost_micros, status, latency_ms, ttft_ms, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (request_id) DO NOTHING`,
    [
      s.requestId,
      s.accountId,
      s.keyId,
      s.model,
      s.deployment,
      s.promptTokens,
      s.completionTokens,
      s.estimated ? 1 : 0,
      s.costMicros,
      s.status,
      Math.round(s.latencyMs),
      s.ttftMs === null ? null : Math.round(s.ttftMs),
      s.createdAt,
    ],
  );
  if (inserted === 0) return;
  await releaseHold(tx, s.requestId);
  const uncollected = s.costMicros > 0 ? await charge(tx, s.accountId, s.costMicros, s.createdAt) : 0;
  if (uncollected > 0) {
    await tx.run('UPDATE usage_records SET uncollected_micros = $2 WHERE request_id = $1', [
      s.requestId,
      uncollected,
    ]);
  }
  await tx.run(
    `INSERT INTO usage_daily (day, account_id, key_id, model, requests, prompt_tokens, completion_tokens, cost_micros)
     VALUES ($1, $2, $3, $4, 1, $5, $6, $7)
     ON CONFLICT (day, account_id, key_id, model) DO UPDATE SET requests = usage_daily.requests + 1,
       prompt_tokens = usage_daily.prompt_tokens + excluded.prompt_tokens,
       completion_tokens = usage_daily.completion_tokens + excluded.completion_tokens,
       cost_micros = usage_daily.cost_micros + excluded.cost_micros`,
    [
      utcDay(s.createdAt),
      s.accountId,
      s.keyId,
      s.model,
      s.promptTokens,
      s.completionTokens,
      s.costMicros - uncollected,
    ],
  );
  if (s.status === 'ok') {
    await tx.run(
      'UPDATE accounts SET last_active_at = $2 WHERE id = $1 AND (last_active_at IS NULL OR last_active_at < $2)',
      [s.accountId, s.createdAt],
    );
  }
}

/**
 * Draws `costMicros` from the account's unexpired grants, soonest expiry first; what they cannot cover
 * becomes debt on a postpaid account, or is written off on a prepaid one. Returns the uncovered amount.
 */
async function charge(tx: Db, accountId: string, costMicros: number, now: number): Promise<number> {
  const grants = await tx.all<{ id: string; remaining_micros: number }>(
    `SELECT id, remaining_micros FROM credit_grants WHERE account_id = $1 AND expires_at > $2 AND remaining_micros > 0
     ORDER BY expires_at, created_at, id ${tx.forUpdate}`,
    [accountId, now],
  );
  let due = costMicros;
  for (const grant of grants) {
    if (due === 0) break;
    const take = Math.min(due, grant.remaining_micros);
    await tx.run('UPDATE credit_grants SET remaining_micros = remaining_micros - $2 WHERE id = $1', [
      grant.id,
      take,
    ]);
    due -= take;
  }
  if (due === 0) return 0;
  const postpaid = await tx.run(
    'UPDATE accounts SET debt_micros = debt_micros + $2 WHERE id = $1 AND credit_limit_micros > 0',
    [accountId, due],
  );
  return postpaid === 1 ? 0 : due;
}
