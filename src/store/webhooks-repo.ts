import { createSecretBox, type SecretBox } from '../shared/secret-box.ts';
import type { Db } from './db.ts';
import type { WebhookDelivery, WebhookEndpoint, WebhookEvent } from '../core/records.ts';

interface EventRow {
  id: string;
  account_id: string;
  event_type: string;
  payload: string;
  status: WebhookEvent['status'];
  attempts: number;
  next_attempt_at: number;
  created_at: number;
  finished_at: number | null;
}

const toEvent = (row: EventRow): WebhookEvent => ({
  id: row.id,
  accountId: row.account_id,
  eventType: row.event_type,
  payload: row.payload,
  status: row.status,
  attempts: row.attempts,
  nextAttemptAt: row.next_attempt_at,
  createdAt: row.created_at,
  finishedAt: row.finished_at,
});

interface DeliveryRow {
  id: string;
  event_id: string;
  account_id: string;
  attempt: number;
  url: string;
  status_code: number | null;
  error: string | null;
  latency_ms: number;
  created_at: number;
}

const toDelivery = (row: DeliveryRow): WebhookDelivery => ({
  id: row.id,
  eventId: row.event_id,
  accountId: row.account_id,
  attempt: row.attempt,
  url: row.url,
  statusCode: row.status_code,
  error: row.error,
  latencyMs: row.latency_ms,
  createdAt: row.created_at,
});

/** Webhook endpoints, the durable outbox of events, and the log of delivery attempts. */
/** One webhook event as the dashboard's event log shows it. */
export interface WebhookEventSummary {
  id: string;
  eventType: string;
  status: string;
  attempts: number;
  nextAttemptAt: number;
  createdAt: number;
  finishedAt: number | null;
  lastStatusCode: number | null;
}

export class WebhooksRepo {
  readonly #db: Db;
  readonly #box: SecretBox;
  /** Signing secrets are sealed by `box` when stored and opened when read (plaintext rows still read). */
  constructor(db: Db, box: SecretBox = createSecretBox(undefined)) {
    this.#db = db;
    this.#box = box;
  }

  async endpoint(accountId: string): Promise<WebhookEndpoint | undefined> {
    const row = await this.#db.get<{ account_id: string; url: string; secret: string; created_at: number }>(
      'SELECT * FROM webhook_endpoints WHERE account_id = $1',
      [accountId],
    );
    return (
      row && {
        accountId: row.account_id,
        url: row.url,
        secret: this.#box.open(row.secret),
        createdAt: row.created_at,
      }
    );
  }

  async putEndpoint(endpoint: WebhookEndpoint): Promise<void> {
    await this.#db.run(
      `INSERT INTO webhook_endpoints (account_id, url, secret, created_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (account_id) DO UPDATE SET url = excluded.url, secret = excluded.secret`,
      [endpoint.accountId, endpoint.url, this.#box.seal(endpoint.secret), endpoint.createdAt],
    );
  }

  /**
   * Seals again every signing secret stored in plaintext or under an older key (a key set for the first time,
   * or rotated); returns how many. Each row is rewritten only if it still holds what was read.
   */
  async resealSecrets(): Promise<number> {
    const rows = await this.#db.all<{ account_id: string; secret: string }>(
      'SELECT account_id, secret FROM webhook_endpoints',
    );
    let resealed = 0;
    for (const row of rows) {
      if (!this.#box.stale(row.secret)) continue;
      resealed += await this.#db.run(
        'UPDATE webhook_endpoints SET secret = $3 WHERE account_id = $1 AND secret = $2',
        [row.account_id, row.secret, this.#box.seal(this.#box.open(row.secret))],
      );
    }
    return resealed;
  }

  async deleteEndpoint(accountId: string): Promise<boolean> {
    return (await this.#db.run('DELETE FROM webhook_endpoints WHERE account_id = $1', [accountId])) === 1;
  }

  async enqueue(event: WebhookEvent): Promise<void> {
    await this.#db.run(
      `INSERT INTO webhook_events (id, account_id, event_type, payload, status, attempts, next_attempt_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        event.id,
        event.accountId,
        event.eventType,
        event.payload,
        event.status,
        event.attempts,
        event.nextAttemptAt,
        event.createdAt,
      ],
    );
  }

  /**
   * Leases up to `limit` due events until `leaseUntil`: an event leased by one instance is invisible to
   * the others until its lease runs out, so each attempt is made once.
   */
  async claimDue(now: number, leaseUntil: number, limit: number): Promise<WebhookEvent[]> {
    const rows = await this.#db.all<EventRow>(
      `UPDATE webhook_events SET lease_until = $2
       WHERE id IN (SELECT id FROM webhook_events WHERE status = 'pending' AND next_attempt_at <= $1 AND lease_until <= $1
                    ORDER BY next_attempt_at LIMIT $3 ${this.#db.skipLocked})
         AND status = 'pending' AND lease_until <= $1
       RETURNING *`,
      [now, leaseUntil, limit],
    );
    return rows.map(toEvent);
  }

  async recordAttempt(
    delivery: WebhookDelivery,
    outcome: { status: WebhookEvent['status']; nextAttemptAt: number; now: number },
  ): Promise<void> {
    await this.#db.transaction(async (tx) => {
      await tx.run(
        `INSERT INTO webhook_deliveries (id, event_id, account_id, attempt, url, status_code, error, latency_ms, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [
          delivery.id,
          delivery.eventId,
          delivery.accountId,
          delivery.attempt,
          delivery.url,
          delivery.statusCode,
          delivery.error,
          Math.round(delivery.latencyMs),
          delivery.createdAt,
        ],
      );
      await tx.run(
        `UPDATE webhook_events SET attempts = $2, status = $3, next_attempt_at = $4, lease_until = 0,
           finished_at = CASE WHEN $3 = 'pending' THEN NULL ELSE CAST($5 AS BIGINT) END
         WHERE id = $1`,
        [delivery.eventId, delivery.attempt, outcome.status, outcome.nextAttemptAt, outcome.now],
      );
    });
  }

  async deliveriesOf(accountId: string, limit: number): Promise<WebhookDelivery[]> {
    const rows = await this.#db.all<DeliveryRow>(
      'SELECT * FROM webhook_deliveries WHERE account_id = $1 ORDER BY created_at DESC, attempt DESC LIMIT $2',
      [accountId, limit],
    );
    return rows.map(toDelivery);
  }

  async delivery(accountId: string, id: string): Promise<WebhookDelivery | undefined> {
    const row = await this.#db.get<DeliveryRow>(
      'SELECT * FROM webhook_deliveries WHERE account_id = $1 AND id = $2',
      [accountId, id],
    );
    return row && toDelivery(row);
  }

  /** Puts an event back in the queue, due now (its id, and so the receiver's dedup key, stay the same). */
  async requeue(eventId: string, now: number): Promise<void> {
    await this.#db.run(
      `UPDATE webhook_events SET status = 'pending', next_attempt_at = $2, lease_until = 0, finished_at = NULL WHERE id = $1`,
      [eventId, now],
    );
  }
  /** The account's most recent events with their delivery state (the dashboard's event log). */
  async eventsOf(accountId: string, limit: number): Promise<WebhookEventSummary[]> {
    const rows = await this.#db.all<{
      id: string;
      event_type: string;
      status: string;
      attempts: number;
      next_attempt_at: number;
      created_at: number;
      finished_at: number | null;
      last_status_code: number | null;
    }>(
      `SELECT e.id, e.event_type, e.status, e.attempts, e.next_attempt_at, e.created_at, e.finished_at,
         (SELECT d.status_code FROM webhook_deliveries d WHERE d.event_id = e.id
          ORDER BY d.created_at DESC, d.attempt DESC LIMIT 1) AS last_status_code
       FROM webhook_events e WHERE e.account_id = $1 ORDER BY e.created_at DESC, e.id LIMIT $2`,
      [accountId, limit],
    );
    return rows.map((row) => ({
      id: row.id,
      eventType: row.event_type,
      status: row.status,
      attempts: Number(row.attempts),
      nextAttemptAt: Number(row.next_attempt_at),
      createdAt: Number(row.created_at),
      finishedAt: row.finished_at === null ? null : Number(row.finished_at),
      lastStatusCode: row.last_status_code === null ? null : Number(row.last_status_code),
    }));
  }
}
