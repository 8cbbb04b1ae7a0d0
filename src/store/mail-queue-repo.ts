import type { Db } from './db.ts';

/** One queued e-mail. */
export interface QueuedMail {
  id: string;
  recipient: string;
  subject: string;
  body: string;
  attempts: number;
}

/**
 * The durable mail queue: rows are queued inside the transaction that decides to send them, claimed with a
 * lease by the one sender, and marked sent one by one, so a restart neither loses nor repeats a sent mail.
 */
export class MailQueueRepo {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  /** Queues one mail; a second mail with the same id is ignored (queuing is idempotent). */
  async enqueue(mail: Omit<QueuedMail, 'attempts'>, now: number): Promise<void> {
    await this.#db.run(
      `INSERT INTO mail_queue (id, recipient, subject, body, next_attempt_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (id) DO NOTHING`,
      [mail.id, mail.recipient, mail.subject, mail.body, now],
    );
  }

  /** Queues one mail to every verified account in one statement; the ids are `${prefix}:${account id}`. */
  async enqueueToVerified(prefix: string, subject: string, body: string, now: number): Promise<number> {
    return this.#db.run(
      `INSERT INTO mail_queue (id, recipient, subject, body, next_attempt_at, created_at)
       SELECT CAST($1 AS TEXT) || ':' || id, email, CAST($2 AS TEXT), CAST($3 AS TEXT), CAST($4 AS BIGINT), CAST($4 AS BIGINT) FROM accounts WHERE email_verified = 1
       ON CONFLICT (id) DO NOTHING`,
      [prefix, subject, body, now],
    );
  }

  /** Claims up to `limit` due mails until `leaseUntil`: nobody else claims them meanwhile. */
  async claimDue(now: number, leaseUntil: number, limit: number): Promise<QueuedMail[]> {
    return this.#db.transaction(async (tx) => {
      const rows = await tx.all<QueuedMail & { attempts: number | string }>(
        `SELECT id, recipient, subject, body, attempts FROM mail_queue
         WHERE status = 'pending' AND next_attempt_at <= $1 AND lease_until <= $1
         ORDER BY next_attempt_at, id LIMIT $2 ${tx.skipLocked}`,
        [now, limit],
      );
      for (const row of rows)
        await tx.run('UPDATE mail_queue SET lease_until = $2 WHERE id = $1', [row.id, leaseUntil]);
      return rows.map((row) => ({ ...row, attempts: Number(row.attempts) }));
    });
  }

  async markSent(id: string, now: number): Promise<void> {
    await this.#db.run(
      `UPDATE mail_queue SET status = 'sent', sent_at = $2, attempts = attempts + 1, lease_until = 0 WHERE id = $1`,
      [id, now],
    );
  }

  /** Records a failed attempt: due again at `nextAttemptAt`, or given up (`failed`) when that is null. */
  async markFailed(id: string, error: string, nextAttemptAt: number | null): Promise<void> {
    await this.#db.run(
      `UPDATE mail_queue SET attempts = attempts + 1, lease_until = 0, last_error = $2,
         status = CASE WHEN $3 = 1 THEN 'failed' ELSE 'pending' END, next_attempt_at = $4 WHERE id = $1`,
      [id, error.slice(0, 500), nextAttemptAt === null ? 1 : 0, nextAttemptAt ?? 0],
    );
  }

  /** How many mails are waiting, sent and given up, by status. */
  async counts(): Promise<Record<string, number>> {
    const rows = await this.#db.all<{ status: string; n: number | string }>(
      'SELECT status, COUNT(*) AS n FROM mail_queue GROUP BY status',
    );
    return Object.fromEntries(rows.map((row) => [row.status, Number(row.n)]));
  }
}
