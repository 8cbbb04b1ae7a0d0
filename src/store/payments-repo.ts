import type { PlanId } from '../core/config.ts';
import type { Db } from './db.ts';
import type { OrderRecord } from '../core/records.ts';

interface OrderRow {
  id: string;
  account_id: string;
  kind: 'plan' | 'topup';
  plan: PlanId | null;
  amount_micros: number;
  currency: string;
  status: OrderRecord['status'];
  reason: string | null;
  provider: string;
  provider_ref: string | null;
  created_at: number;
  completed_at: number | null;
}

const toOrder = (row: OrderRow): OrderRecord => ({
  id: row.id,
  accountId: row.account_id,
  kind: row.kind,
  plan: row.plan,
  amountMicros: row.amount_micros,
  currency: row.currency,
  status: row.status,
  reason: row.reason,
  provider: row.provider,
  providerRef: row.provider_ref,
  createdAt: row.created_at,
  completedAt: row.completed_at,
});

/** Orders and the payment-provider events already applied. */
export class PaymentsRepo {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  async insertOrder(order: OrderRecord): Promise<void> {
    await this.#db.run(
      `INSERT INTO orders (id, account_id, kind, plan, amount_micros, currency, status, reason, provider, provider_ref, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [
        order.id,
        order.accountId,
        order.kind,
        order.plan,
        order.amountMicros,
        order.currency,
        order.status,
        order.reason,
        order.provider,
        order.providerRef,
        order.createdAt,
      ],
    );
  }

  async order(id: string): Promise<OrderRecord | undefined> {
    const row = await this.#db.get<OrderRow>('SELECT * FROM orders WHERE id = $1', [id]);
    return row && toOrder(row);
  }

  async ordersOf(accountId: string): Promise<OrderRecord[]> {
    const rows = await this.#db.all<OrderRow>(
      'SELECT * FROM orders WHERE account_id = $1 ORDER BY created_at DESC, id',
      [accountId],
    );
    return rows.map(toOrder);
  }

  async setProviderRef(id: string, ref: string): Promise<void> {
    await this.#db.run('UPDATE orders SET provider_ref = $2 WHERE id = $1', [id, ref]);
  }

  /** Moves a pending order to paid or failed; false if it was not pending (so it is applied at most once). */
  async complete(
    id: string,
    status: 'paid' | 'failed',
    reason: string | null,
    now: number,
  ): Promise<boolean> {
    const changed = await this.#db.run(
      `UPDATE orders SET status = $2, reason = $3, completed_at = $4 WHERE id = $1 AND status = 'pending'`,
      [id, status, reason, now],
    );
    return changed === 1;
  }

  /** Records a provider's event id; false if it was recorded before (a duplicate or a replay). */
  async markEventProcessed(provider: string, eventId: string, now: number): Promise<boolean> {
    const changed = await this.#db.run(
      'INSERT INTO processed_events (provider, event_id, processed_at) VALUES ($1, $2, $3) ON CONFLICT (provider, event_id) DO NOTHING',
      [provider, eventId, now],
    );
    return changed === 1;
  }
}
