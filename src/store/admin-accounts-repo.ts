import type { PlanId } from '../core/config.ts';
import { type AccountRow, toAccount } from './accounts-repo.ts';
import type { Db, SqlParam } from './db.ts';
import type { AccountRecord, AccountRole, AccountStatus, CreditGrant, GrantKind } from '../core/records.ts';

export type AccountSort = 'created_at' | 'email' | 'last_active_at';

/** What the operators' accounts list asks for: every field narrows the page, sort and order order it. */
export interface AccountQuery {
  /** An e-mail substring, or an exact account id. */
  search?: string;
  plan?: PlanId;
  status?: AccountStatus;
  sort: AccountSort;
  order: 'asc' | 'desc';
  limit: number;
  offset: number;
}

/** The operators' reads and writes on accounts, beside what AccountsRepo gives every account. */
export class AdminAccountsRepo {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  /**
   * A page of accounts and the number that match. Plan and status filters and each sort key have an index
   * (migration 007); an e-mail substring search reads every row (about 40 ms at 100,000, docs/performance.md).
   */
  async search(query: AccountQuery): Promise<{ accounts: AccountRecord[]; total: number }> {
    const where: string[] = [];
    const params: SqlParam[] = [];
    const bind = (value: SqlParam): string => {
      params.push(value);
      return `$${params.length}`;
    };
    if (query.search) {
      const pattern = `%${query.search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      where.push(`(id = ${bind(query.search)} OR email LIKE ${bind(pattern)} ESCAPE '\\')`);
    }
    if (query.plan) where.push(`plan = ${bind(query.plan)}`);
    if (query.status) where.push(`status = ${bind(query.status)}`);
    const clause = where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`;
    const direction = query.order === 'asc' ? 'ASC' : 'DESC';
    // A never-active account counts as the least recently active; the expression has its own index
    // (accounts_activity), and the id breaks ties so that pages never overlap.
    const column = query.sort === 'last_active_at' ? 'COALESCE(last_active_at, 0)' : query.sort;
    const orderBy = `${column} ${direction}, id ${direction}`;
    const rows = await this.#db.all<AccountRow>(
      `SELECT * FROM accounts ${clause} ORDER BY ${orderBy} LIMIT ${bind(query.limit)} OFFSET ${bind(query.offset)}`,
      params,
    );
    const count = await this.#db.get<{ n: number | string }>(
      `SELECT COUNT(*) AS n FROM accounts ${clause}`,
      params.slice(0, params.length - 2),
    );
    return { accounts: rows.map(toAccount), total: Number(count?.n ?? 0) };
  }

  async setRole(id: string, role: AccountRole): Promise<boolean> {
    return (await this.#db.run('UPDATE accounts SET role = $2 WHERE id = $1', [id, role])) === 1;
  }

  async setSuspendedReason(id: string, reason: string | null): Promise<void> {
    await this.#db.run('UPDATE accounts SET suspended_reason = $2 WHERE id = $1', [id, reason]);
  }

  async operators(): Promise<AccountRecord[]> {
    const rows = await this.#db.all<AccountRow>(
      "SELECT * FROM accounts WHERE role = 'operator' ORDER BY created_at, id",
    );
    return rows.map(toAccount);
  }

  /** Each account's unexpired credit (µUSD) in one query; accounts without any are absent. */
  async creditOf(accountIds: readonly string[], now: number): Promise<Map<string, number>> {
    if (accountIds.length === 0) return new Map();
    const rows = await this.#db.all<{ account_id: string; credit: number | string }>(
      `SELECT account_id, SUM(remaining_micros) AS credit FROM credit_grants
       WHERE expires_at > $1 AND account_id IN (${accountIds.map((_, i) => `$${i + 2}`).join(', ')})
       GROUP BY account_id`,
      [now, ...accountIds],
    );
    return new Map(rows.map((row) => [row.account_id, Number(row.credit)]));
  }

  /** Every grant of the account, spent and expired ones too, newest first. */
  async grantsOf(accountId: string): Promise<CreditGrant[]> {
    const rows = await this.#db.all<{
      id: string;
      account_id: string;
      kind: GrantKind;
      amount_micros: number | string;
      remaining_micros: number | string;
      expires_at: number | string;
      created_at: number | string;
      source: string | null;
    }>('SELECT * FROM credit_grants WHERE account_id = $1 ORDER BY created_at DESC, id', [accountId]);
    return rows.map((row) => ({
      id: row.id,
      accountId: row.account_id,
      kind: row.kind,
      amountMicros: Number(row.amount_micros),
      remainingMicros: Number(row.remaining_micros),
      expiresAt: Number(row.expires_at),
      createdAt: Number(row.created_at),
      source: row.source,
    }));
  }
}
