import type { Db } from './db.ts';

/** A signed-in browser: the row behind the dashboard's session cookie. */
export interface SessionRecord {
  id: string;
  /** SHA-256 (hex) of the cookie's secret; the secret itself is never stored. */
  tokenHash: string;
  accountId: string;
  /** The synchronizer token the dashboard sends back in `X-CSRF-Token` on every state-changing request. */
  csrfToken: string;
  createdAt: number;
  /** Last use (written at most once a minute); idle expiry counts from here. */
  lastSeenAt: number;
  /** Absolute expiry: the session ends then however busy it is. */
  expiresAt: number;
}

interface SessionRow {
  id: string;
  token_hash: string;
  account_id: string;
  csrf_token: string;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
}

const toSession = (row: SessionRow): SessionRecord => ({
  id: row.id,
  tokenHash: row.token_hash,
  accountId: row.account_id,
  csrfToken: row.csrf_token,
  createdAt: Number(row.created_at),
  lastSeenAt: Number(row.last_seen_at),
  expiresAt: Number(row.expires_at),
});

/** Sessions, password-reset tokens and the password itself: what signing in and out changes. */
export class SessionsRepo {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  async insert(session: SessionRecord): Promise<void> {
    await this.#db.run(
      `INSERT INTO sessions (id, token_hash, account_id, csrf_token, created_at, last_seen_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        session.id,
        session.tokenHash,
        session.accountId,
        session.csrfToken,
        session.createdAt,
        session.lastSeenAt,
        session.expiresAt,
      ],
    );
  }

  /** The live session with this secret's hash: not past its absolute expiry, nor idle since `idleSince`. */
  async live(tokenHash: string, now: number, idleSince: number): Promise<SessionRecord | undefined> {
    const row = await this.#db.get<SessionRow>(
      `SELECT id, token_hash, account_id, csrf_token, created_at, last_seen_at, expires_at FROM sessions
       WHERE token_hash = $1 AND expires_at > $2 AND last_seen_at > $3`,
      [tokenHash, now, idleSince],
    );
    return row && toSession(row);
  }

  async touch(id: string, now: number): Promise<void> {
    await this.#db.run('UPDATE sessions SET last_seen_at = $2 WHERE id = $1', [id, now]);
  }

  /** Ends one session; true when it existed. */
  async delete(id: string): Promise<boolean> {
    return (await this.#db.run('DELETE FROM sessions WHERE id = $1', [id])) === 1;
  }

  /** Ends every session of the account except `keepId`; resolves to how many ended. */
  async deleteForAccount(accountId: string, keepId: string | null = null): Promise<number> {
    return this.#db.run('DELETE FROM sessions WHERE account_id = $1 AND id <> $2', [accountId, keepId ?? '']);
  }

  async countForAccount(accountId: string): Promise<number> {
    const row = await this.#db.get<{ n: number }>(
      'SELECT COUNT(*) AS n FROM sessions WHERE account_id = $1',
      [accountId],
    );
    return Number(row?.n ?? 0);
  }

  /** Deletes sessions past their absolute or idle expiry. */
  async deleteExpired(now: number, idleSince: number): Promise<number> {
    return this.#db.run('DELETE FROM sessions WHERE expires_at <= $1 OR last_seen_at <= $2', [
      now,
      idleSince,
    ]);
  }

  async setPasswordHash(accountId: string, passwordHash: string): Promise<boolean> {
    return (
      (await this.#db.run('UPDATE accounts SET password_hash = $2 WHERE id = $1', [
        accountId,
        passwordHash,
      ])) === 1
    );
  }

  async insertResetToken(tokenHash: string, accountId: string, expiresAt: number): Promise<void> {
    await this.#db.run(
      'INSERT INTO password_reset_tokens (token_hash, account_id, expires_at) VALUES ($1, $2, $3)',
      [tokenHash, accountId, expiresAt],
    );
  }

  /** Uses a reset token once: the account it names, or why it cannot be used. */
  async consumeResetToken(
    tokenHash: string,
    now: number,
  ): Promise<{ accountId: string } | 'unknown' | 'used' | 'expired'> {
    const row = await this.#db.get<{ account_id: string; expires_at: number; used_at: number | null }>(
      'SELECT account_id, expires_at, used_at FROM password_reset_tokens WHERE token_hash = $1',
      [tokenHash],
    );
    if (!row) return 'unknown';
    if (row.used_at !== null) return 'used';
    if (Number(row.expires_at) <= now) return 'expired';
    const changed = await this.#db.run(
      'UPDATE password_reset_tokens SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL',
      [tokenHash, now],
    );
    return changed === 1 ? { accountId: row.account_id } : 'used';
  }

  /** Voids the account's unused reset tokens (after a reset or a password change). */
  async voidResetTokens(accountId: string, now: number): Promise<void> {
    await this.#db.run(
      'UPDATE password_reset_tokens SET used_at = $2 WHERE account_id = $1 AND used_at IS NULL',
      [accountId, now],
    );
  }
}
