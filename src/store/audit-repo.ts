import type { Db } from './db.ts';

/** One operator action as the audit log keeps it. */
export interface AuditEntry {
  id: string;
  at: number;
  /** The operator's e-mail, or 'admin-key'. */
  actor: string;
  actorAccountId: string | null;
  action: string;
  accountId: string | null;
  details: Record<string, unknown>;
  ip: string;
}

interface AuditRow {
  id: string;
  at: number | string;
  actor: string;
  actor_account_id: string | null;
  action: string;
  account_id: string | null;
  details: string;
  ip: string;
}

const toEntry = (row: AuditRow): AuditEntry => ({
  id: row.id,
  at: Number(row.at),
  actor: row.actor,
  actorAccountId: row.actor_account_id,
  action: row.action,
  accountId: row.account_id,
  details: JSON.parse(row.details) as Record<string, unknown>,
  ip: row.ip,
});

/** The operators' audit log: rows are appended and read, never changed (there is no statement for it). */
export class AuditRepo {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  async append(entry: AuditEntry): Promise<void> {
    await this.#db.run(
      `INSERT INTO audit_log (id, at, actor, actor_account_id, action, account_id, details, ip)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        entry.id,
        entry.at,
        entry.actor,
        entry.actorAccountId,
        entry.action,
        entry.accountId,
        JSON.stringify(entry.details),
        entry.ip,
      ],
    );
  }

  /** A page of entries, newest first, optionally about one account; with the total that match. */
  async list(
    filter: { accountId?: string },
    limit: number,
    offset: number,
  ): Promise<{ entries: AuditEntry[]; total: number }> {
    const where = filter.accountId === undefined ? '' : 'WHERE account_id = $3';
    const params = filter.accountId === undefined ? [] : [filter.accountId];
    const rows = await this.#db.all<AuditRow>(
      `SELECT * FROM audit_log ${where} ORDER BY at DESC, id DESC LIMIT $1 OFFSET $2`,
      [limit, offset, ...params],
    );
    const count = await this.#db.get<{ n: number | string }>(
      `SELECT COUNT(*) AS n FROM audit_log ${where.replace('$3', '$1')}`,
      params,
    );
    return { entries: rows.map(toEntry), total: Number(count?.n ?? 0) };
  }
}
