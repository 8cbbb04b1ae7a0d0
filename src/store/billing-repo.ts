import type { PlanId } from '../core/config.ts';
import type { Db } from './db.ts';
import type { LimitPeriod } from '../core/records.ts';

export type SubscriptionStatus = 'active' | 'past_due' | 'canceled' | 'expired';

/** An account's subscription to a paid plan (times in wall ms). */
export interface SubscriptionRecord {
  accountId: string;
  plan: PlanId;
  status: SubscriptionStatus;
  provider: string;
  providerRef: string | null;
  periodStart: number;
  periodEnd: number;
  cancelAtPeriodEnd: boolean;
  /** A downgrade that takes effect at the period end. */
  nextPlan: PlanId | null;
  /** When the next charge (renewal or retry) is due; null when none will be made. */
  nextAttemptAt: number | null;
  failedAttempts: number;
  graceUntil: number | null;
  /** Test provider only: the saved test card declines. */
  testCardDeclines: boolean;
  /** The overage cap the account chose (µUSD as charged); null: the plan's default. */
  overageCapMicros: number | null;
  /** Overage at list prices whose charge failed. */
  overageOwedMicros: number;
  updatedAt: number;
}

export interface InvoiceLine {
  description: string;
  amountMicros: number;
}

export interface BuyerDetails {
  email: string;
  name: string | null;
  address: string | null;
  taxId: string | null;
}

export interface InvoiceRecord {
  id: string;
  number: number;
  accountId: string;
  orderId: string | null;
  issuedAt: number;
  currency: string;
  totalMicros: number;
  lines: InvoiceLine[];
  buyer: BuyerDetails;
}

interface SubscriptionRow {
  account_id: string;
  plan: PlanId;
  status: SubscriptionStatus;
  provider: string;
  provider_ref: string | null;
  period_start: number | string;
  period_end: number | string;
  cancel_at_period_end: number;
  next_plan: PlanId | null;
  next_attempt_at: number | string | null;
  failed_attempts: number;
  grace_until: number | string | null;
  test_card_declines: number;
  overage_cap_micros: number | string | null;
  overage_owed_micros: number | string;
  updated_at: number | string;
}

const num = (value: number | string | null): number | null => (value === null ? null : Number(value));

const toSubscription = (row: SubscriptionRow): SubscriptionRecord => ({
  accountId: row.account_id,
  plan: row.plan,
  status: row.status,
  provider: row.provider,
  providerRef: row.provider_ref,
  periodStart: Number(row.period_start),
  periodEnd: Number(row.period_end),
  cancelAtPeriodEnd: Number(row.cancel_at_period_end) === 1,
  nextPlan: row.next_plan,
  nextAttemptAt: num(row.next_attempt_at),
  failedAttempts: Number(row.failed_attempts),
  graceUntil: num(row.grace_until),
  testCardDeclines: Number(row.test_card_declines) === 1,
  overageCapMicros: num(row.overage_cap_micros),
  overageOwedMicros: Number(row.overage_owed_micros),
  updatedAt: Number(row.updated_at),
});

interface InvoiceRow {
  id: string;
  number: number | string;
  account_id: string;
  order_id: string | null;
  issued_at: number | string;
  currency: string;
  total_micros: number | string;
  lines: string;
  buyer: string;
}

const toInvoice = (row: InvoiceRow): InvoiceRecord => ({
  id: row.id,
  number: Number(row.number),
  accountId: row.account_id,
  orderId: row.order_id,
  issuedAt: Number(row.issued_at),
  currency: row.currency,
  totalMicros: Number(row.total_micros),
  lines: JSON.parse(row.lines) as InvoiceLine[],
  buyer: JSON.parse(row.buyer) as BuyerDetails,
});

/** Subscriptions, the per-account billing clock, billing details and invoices. */
export class BillingRepo {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  async subscription(accountId: string, forUpdate = false): Promise<SubscriptionRecord | undefined> {
    const row = await this.#db.get<SubscriptionRow>(
      `SELECT * FROM subscriptions WHERE account_id = $1 ${forUpdate ? this.#db.forUpdate : ''}`,
      [accountId],
    );
    return row && toSubscription(row);
  }

  /** Creates or replaces the account's subscription. */
  async putSubscription(s: SubscriptionRecord): Promise<void> {
    await this.#db.run(
      `INSERT INTO subscriptions (account_id, plan, status, provider, provider_ref, period_start, period_end,
         cancel_at_period_end, next_plan, next_attempt_at, failed_attempts, grace_until, test_card_declines,
         overage_cap_micros, overage_owed_micros, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
       ON CONFLICT (account_id) DO UPDATE SET plan = excluded.plan, status = excluded.status,
         provider = excluded.provider, provider_ref = excluded.provider_ref, period_start = excluded.period_start,
         period_end = excluded.period_end, cancel_at_period_end = excluded.cancel_at_period_end,
         next_plan = excluded.next_plan, next_attempt_at = excluded.next_attempt_at,
         failed_attempts = excluded.failed_attempts, grace_until = excluded.grace_until,
         test_card_declines = excluded.test_card_declines, overage_cap_micros = excluded.overage_cap_micros,
         overage_owed_micros = excluded.overage_owed_micros, updated_at = excluded.updated_at`,
      [
        s.accountId,
        s.plan,
        s.status,
        s.provider,
        s.providerRef,
        s.periodStart,
        s.periodEnd,
        s.cancelAtPeriodEnd ? 1 : 0,
        s.nextPlan,
        s.nextAttemptAt,
        s.failedAttempts,
        s.graceUntil,
        s.testCardDeclines ? 1 : 0,
        s.overageCapMicros,
        s.overageOwedMicros,
        s.updatedAt,
      ],
    );
  }

  /** Accounts whose next charge is due at `now` (wall time), oldest first. */
  async dueAccounts(now: number, limit: number): Promise<string[]> {
    const rows = await this.#db.all<{ account_id: string }>(
      `SELECT account_id FROM subscriptions WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= $1
       ORDER BY next_attempt_at LIMIT $2`,
      [now, limit],
    );
    return rows.map((row) => row.account_id);
  }

  /**
   * Claims a due charge: moves `next_attempt_at` from the value read to null, so of several instances (or
   * rounds) that read the same due row, exactly one goes on to charge it. Call inside the charging transaction.
   */
  async claimDue(accountId: string, dueAt: number): Promise<boolean> {
    const changed = await this.#db.run(
      'UPDATE subscriptions SET next_attempt_at = NULL WHERE account_id = $1 AND next_attempt_at = $2',
      [accountId, dueAt],
    );
    return changed === 1;
  }

  async clockOffset(accountId: string): Promise<number> {
    const row = await this.#db.get<{ offset_ms: number | string }>(
      'SELECT offset_ms FROM billing_clocks WHERE account_id = $1',
      [accountId],
    );
    return row ? Number(row.offset_ms) : 0;
  }

  /**
   * Moves the account's billing time forward by `ms`: the offset grows, and every deadline of the account
   * that wall-time checks read (plan end, credit expiries, subscription dates) moves back by as much.
   */
  async advanceClock(accountId: string, ms: number): Promise<void> {
    await this.#db.run(
      `INSERT INTO billing_clocks (account_id, offset_ms) VALUES ($1, $2)
       ON CONFLICT (account_id) DO UPDATE SET offset_ms = billing_clocks.offset_ms + excluded.offset_ms`,
      [accountId, ms],
    );
    await this.#db.run(
      'UPDATE accounts SET plan_expires_at = plan_expires_at - $2 WHERE id = $1 AND plan_expires_at IS NOT NULL',
      [accountId, ms],
    );
    await this.#db.run('UPDATE credit_grants SET expires_at = expires_at - $2 WHERE account_id = $1', [
      accountId,
      ms,
    ]);
    await this.#db.run(
      `UPDATE subscriptions SET period_start = period_start - $2, period_end = period_end - $2,
         next_attempt_at = next_attempt_at - $2, grace_until = grace_until - $2 WHERE account_id = $1`,
      [accountId, ms],
    );
  }

  /**
   * How far past its prepaid credit the account may go (its overage allowance at list prices): the credit limit
   * the hold path already counts, so overage needs nothing of its own there.
   */
  async setOverageAllowance(accountId: string, micros: number): Promise<void> {
    await this.#db.run('UPDATE accounts SET credit_limit_micros = $2 WHERE id = $1', [accountId, micros]);
  }

  /** The overage accrued so far (the account's debt at list prices), read under the account's lock. */
  async accruedOverage(accountId: string): Promise<number> {
    const row = await this.#db.get<{ debt: number | string }>(
      `SELECT debt_micros AS debt FROM accounts WHERE id = $1 ${this.#db.forUpdate}`,
      [accountId],
    );
    return Number(row?.debt ?? 0);
  }

  /** Takes `micros` of accrued overage off the account (it was invoiced, or moved to what is owed). */
  async takeOverage(accountId: string, micros: number): Promise<void> {
    await this.#db.run('UPDATE accounts SET debt_micros = debt_micros - $2 WHERE id = $1', [
      accountId,
      micros,
    ]);
  }

  /** Ends the account's plan allowances still running (an upgrade replaces them). */
  async endPlanGrants(accountId: string, now: number): Promise<void> {
    await this.#db.run(
      "UPDATE credit_grants SET expires_at = $2 WHERE account_id = $1 AND kind = 'plan' AND expires_at > $2",
      [accountId, now],
    );
  }

  /** Keeps the plan allowances that end at `from` until `to` (a failed renewal's grace period). */
  async extendPlanGrants(accountId: string, from: number, to: number): Promise<void> {
    await this.#db.run(
      "UPDATE credit_grants SET expires_at = $3 WHERE account_id = $1 AND kind = 'plan' AND expires_at = $2",
      [accountId, from, to],
    );
  }

  /** Records an alert's crossing; false when it was already recorded (the alert was sent). */
  async recordAlert(id: string, accountId: string, kind: string, now: number): Promise<boolean> {
    const inserted = await this.#db.run(
      'INSERT INTO billing_alerts (id, account_id, kind, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING',
      [id, accountId, kind, now],
    );
    return inserted === 1;
  }

  /** Re-arms an alert (its condition no longer holds). */
  async clearAlert(id: string): Promise<void> {
    await this.#db.run('DELETE FROM billing_alerts WHERE id = $1', [id]);
  }

  async alertSettings(accountId: string): Promise<{ lowBalanceMicros: number | null; events: string[] }> {
    const row = await this.#db.get<{
      low_balance_micros: number | string | null;
      alert_events: string | null;
    }>('SELECT low_balance_micros, alert_events FROM billing_details WHERE account_id = $1', [accountId]);
    return {
      lowBalanceMicros: num(row?.low_balance_micros ?? null),
      events: row?.alert_events ? (JSON.parse(row.alert_events) as string[]) : [],
    };
  }

  async putAlertSettings(
    accountId: string,
    lowBalanceMicros: number | null,
    events: string[],
  ): Promise<void> {
    await this.#db.run(
      `INSERT INTO billing_details (account_id, low_balance_micros, alert_events) VALUES ($1, $2, $3)
       ON CONFLICT (account_id) DO UPDATE SET low_balance_micros = excluded.low_balance_micros,
         alert_events = excluded.alert_events`,
      [accountId, lowBalanceMicros, JSON.stringify(events)],
    );
  }

  /** Accounts with a low-balance threshold. */
  async lowBalanceWatches(): Promise<{ accountId: string; thresholdMicros: number }[]> {
    const rows = await this.#db.all<{ account_id: string; low_balance_micros: number | string }>(
      'SELECT account_id, low_balance_micros FROM billing_details WHERE low_balance_micros IS NOT NULL',
    );
    return rows.map((r) => ({ accountId: r.account_id, thresholdMicros: Number(r.low_balance_micros) }));
  }

  /** Active keys with a spending limit: what the key-limit alerts watch. */
  async keyLimitWatches(): Promise<
    { keyId: string; accountId: string; name: string; limitMicros: number; period: LimitPeriod }[]
  > {
    const rows = await this.#db.all<{
      id: string;
      account_id: string;
      name: string;
      spend_limit_micros: number | string;
      limit_period: LimitPeriod | null;
    }>(
      `SELECT id, account_id, name, spend_limit_micros, limit_period FROM api_keys
       WHERE spend_limit_micros IS NOT NULL AND spend_limit_micros > 0 AND status = 'active'`,
    );
    return rows.map((r) => ({
      keyId: r.id,
      accountId: r.account_id,
      name: r.name,
      limitMicros: Number(r.spend_limit_micros),
      period: r.limit_period ?? 'never',
    }));
  }

  /** A key's charged spend from a UTC day (`YYYY-MM-DD`) on, from the daily rollup, in µUSD. */
  async keySpentSince(keyId: string, fromDay: string): Promise<number> {
    const row = await this.#db.get<{ spent: number | string | null }>(
      'SELECT CAST(SUM(cost_micros) AS BIGINT) AS spent FROM usage_daily WHERE key_id = $1 AND day >= $2',
      [keyId, fromDay],
    );
    return Number(row?.spent ?? 0);
  }

  /** Active subscriptions renewing by `until`, and trial grants with credit left expiring by `until`. */
  async endingSoon(
    now: number,
    until: number,
  ): Promise<{
    renewing: SubscriptionRecord[];
    trials: { id: string; accountId: string; expiresAt: number }[];
  }> {
    const subs = await this.#db.all<SubscriptionRow>(
      `SELECT * FROM subscriptions WHERE status = 'active' AND cancel_at_period_end = 0 AND period_end > $1 AND period_end <= $2`,
      [now, until],
    );
    const trials = await this.#db.all<{ id: string; account_id: string; expires_at: number | string }>(
      `SELECT id, account_id, expires_at FROM credit_grants WHERE kind = 'trial' AND remaining_micros > 0
       AND expires_at > $1 AND expires_at <= $2`,
      [now, until],
    );
    return {
      renewing: subs.map(toSubscription),
      trials: trials.map((t) => ({ id: t.id, accountId: t.account_id, expiresAt: Number(t.expires_at) })),
    };
  }

  async details(accountId: string): Promise<Omit<BuyerDetails, 'email'>> {
    const row = await this.#db.get<{ name: string | null; address: string | null; tax_id: string | null }>(
      'SELECT name, address, tax_id FROM billing_details WHERE account_id = $1',
      [accountId],
    );
    return { name: row?.name ?? null, address: row?.address ?? null, taxId: row?.tax_id ?? null };
  }

  async putDetails(accountId: string, details: Omit<BuyerDetails, 'email'>): Promise<void> {
    await this.#db.run(
      `INSERT INTO billing_details (account_id, name, address, tax_id) VALUES ($1, $2, $3, $4)
       ON CONFLICT (account_id) DO UPDATE SET name = excluded.name, address = excluded.address, tax_id = excluded.tax_id`,
      [accountId, details.name, details.address, details.taxId],
    );
  }

  /**
   * Issues an invoice with the next number. Call inside the transaction that records the payment: the
   * sequence row stays locked until it commits, and a rollback gives the number back (no gaps).
   */
  async issueInvoice(invoice: Omit<InvoiceRecord, 'number'>): Promise<InvoiceRecord> {
    await this.#db.run('UPDATE invoice_sequence SET last_number = last_number + 1 WHERE id = 1');
    const row = await this.#db.get<{ last_number: number | string }>(
      'SELECT last_number FROM invoice_sequence WHERE id = 1',
    );
    const issued = { ...invoice, number: Number(row?.last_number) };
    await this.#db.run(
      `INSERT INTO invoices (id, number, account_id, order_id, issued_at, currency, total_micros, lines, buyer)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [
        issued.id,
        issued.number,
        issued.accountId,
        issued.orderId,
        issued.issuedAt,
        issued.currency,
        issued.totalMicros,
        JSON.stringify(issued.lines),
        JSON.stringify(issued.buyer),
      ],
    );
    return issued;
  }

  async invoicesOf(accountId: string): Promise<InvoiceRecord[]> {
    const rows = await this.#db.all<InvoiceRow>(
      'SELECT * FROM invoices WHERE account_id = $1 ORDER BY number DESC',
      [accountId],
    );
    return rows.map(toInvoice);
  }

  async invoice(id: string): Promise<InvoiceRecord | undefined> {
    const row = await this.#db.get<InvoiceRow>('SELECT * FROM invoices WHERE id = $1', [id]);
    return row && toInvoice(row);
  }
}
