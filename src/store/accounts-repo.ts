import type { PlanId } from '../core/config.ts';
import type { Db } from './db.ts';
import type {
  AccountRecord,
  AccountRole,
  AccountStatus,
  ApiKeyRecord,
  KeyControls,
  LimitPeriod,
} from '../core/records.ts';

export interface AccountRow {
  id: string;
  email: string;
  password_hash: string;
  email_verified: number;
  status: AccountStatus;
  plan: PlanId;
  plan_expires_at: number | null;
  rpm_limit: number | null;
  tpm_limit: number | null;
  daily_token_limit: number | null;
  credit_limit_micros: number;
  debt_micros: number;
  held_micros: number;
  created_at: number;
  last_active_at: number | null;
  role: AccountRole;
  suspended_reason: string | null;
}

export const toAccount = (row: AccountRow): AccountRecord => ({
  id: row.id,
  email: row.email,
  passwordHash: row.password_hash,
  emailVerified: row.email_verified === 1,
  status: row.status,
  plan: row.plan,
  planExpiresAt: row.plan_expires_at,
  rpmLimit: row.rpm_limit,
  tpmLimit: row.tpm_limit,
  dailyTokenLimit: row.daily_token_limit,
  creditLimitMicros: row.credit_limit_micros,
  debtMicros: row.debt_micros,
  heldMicros: row.held_micros,
  createdAt: row.created_at,
  lastActiveAt: row.last_active_at,
  role: row.role,
  suspendedReason: row.suspended_reason,
});

interface KeyRow {
  id: string;
  account_id: string;
  name: string;
  prefix: string;
  secret_hash: string;
  allowed_ips: string | null;
  status: 'active' | 'revoked';
  created_at: number;
  revoked_at: number | null;
  spend_limit_micros: number | string | null;
  limit_period: LimitPeriod | null;
  expires_at: number | string | null;
  allowed_models: string | null;
  limit_subject?: string | null;
}

const toKey = (row: KeyRow): ApiKeyRecord => ({
  id: row.id,
  accountId: row.account_id,
  name: row.name,
  prefix: row.prefix,
  secretHash: row.secret_hash,
  allowedIps: row.allowed_ips === null ? null : (JSON.parse(row.allowed_ips) as string[]),
  status: row.status,
  createdAt: row.created_at,
  revokedAt: row.revoked_at,
  controls: {
    spendLimitMicros: row.spend_limit_micros === null ? null : Number(row.spend_limit_micros),
    limitPeriod: row.limit_period,
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
    allowedModels: row.allowed_models === null ? null : (JSON.parse(row.allowed_models) as string[]),
  },
  ...(row.limit_subject ? { limitSubject: row.limit_subject } : {}),
});

const controlParams = (controls: KeyControls | undefined): (string | number | null)[] => [
  controls?.spendLimitMicros ?? null,
  controls?.limitPeriod ?? null,
  controls?.expiresAt ?? null,
  controls?.allowedModels ? JSON.stringify(controls.allowedModels) : null,
];

export interface LimitOverrides {
  rpmLimit?: number | null;
  tpmLimit?: number | null;
  dailyTokenLimit?: number | null;
  creditLimitMicros?: number;
}

/** Accounts, their API keys and e-mail tokens. */
export class AccountsRepo {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  async insert(account: AccountRecord): Promise<void> {
    await this.#db.run(
      `INSERT INTO accounts (id, email, password_hash, email_verified, status, plan, plan_expires_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        account.id,
        account.email,
        account.passwordHash,
        account.emailVerified ? 1 : 0,
        account.status,
        account.plan,
        account.planExpiresAt,
        account.createdAt,
      ],
    );
  }

  async byId(id: string): Promise<AccountRecord | undefined> {
    const row = await this.#db.get<AccountRow>('SELECT * FROM accounts WHERE id = $1', [id]);
    return row && toAccount(row);
  }

  async byEmail(email: string): Promise<AccountRecord | undefined> {
    const row = await this.#db.get<AccountRow>('SELECT * FROM accounts WHERE email = $1', [email]);
    return row && toAccount(row);
  }

  /** A page of accounts, newest first, optionally those whose e-mail contains `search`. */
  async list(
    search: string,
    limit: number,
    offset: number,
  ): Promise<{ accounts: AccountRecord[]; total: number }> {
    const pattern = `%${search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const rows = await this.#db.all<AccountRow>(
      `SELECT * FROM accounts WHERE email LIKE $1 ESCAPE '\\' ORDER BY created_at DESC, id LIMIT $2 OFFSET $3`,
      [pattern, limit, offset],
    );
    const count = await this.#db.get<{ n: number }>(
      `SELECT COUNT(*) AS n FROM accounts WHERE email LIKE $1 ESCAPE '\\'`,
      [pattern],
    );
    return { accounts: rows.map(toAccount), total: Number(count?.n ?? 0) };
  }

  async setStatus(id: string, status: AccountStatus): Promise<boolean> {
    return (await this.#db.run('UPDATE accounts SET status = $2 WHERE id = $1', [id, status])) === 1;
  }

  async setPlan(id: string, plan: PlanId, expiresAt: number | null): Promise<boolean> {
    return (
      (await this.#db.run('UPDATE accounts SET plan = $2, plan_expires_at = $3 WHERE id = $1', [
        id,
        plan,
        expiresAt,
      ])) === 1
    );
  }

  async setLimits(id: string, limits: LimitOverrides): Promise<boolean> {
    const columns: [string, number | null | undefined][] = [
      ['rpm_limit', limits.rpmLimit],
      ['tpm_limit', limits.tpmLimit],
      ['daily_token_limit', limits.dailyTokenLimit],
      ['credit_limit_micros', limits.creditLimitMicros],
    ];
    const set = columns.filter(([, value]) => value !== undefined);
    if (set.length === 0) return (await this.byId(id)) !== undefined;
    const assignments = set.map(([column], index) => `${column} = $${index + 2}`).join(', ');
    return (
      (await this.#db.run(`UPDATE accounts SET ${assignments} WHERE id = $1`, [
        id,
        ...set.map(([, v]) => v ?? null),
      ])) === 1
    );
  }

  async markVerified(id: string): Promise<void> {
    await this.#db.run('UPDATE accounts SET email_verified = 1 WHERE id = $1', [id]);
  }

  async insertEmailToken(tokenHash: string, accountId: string, expiresAt: number): Promise<void> {
    await this.#db.run('INSERT INTO email_tokens (token_hash, account_id, expires_at) VALUES ($1, $2, $3)', [
      tokenHash,
      accountId,
      expiresAt,
    ]);
  }

  /** Uses a verification token once: the account id, or why it cannot be used. */
  async consumeEmailToken(
    tokenHash: string,
    now: number,
  ): Promise<{ accountId: string } | 'unknown' | 'used' | 'expired'> {
    const row = await this.#db.get<{ account_id: string; expires_at: number; used_at: number | null }>(
      'SELECT account_id, expires_at, used_at FROM email_tokens WHERE token_hash = $1',
      [tokenHash],
    );
    if (!row) return 'unknown';
    if (row.used_at !== null) return 'used';
    if (row.expires_at <= now) return 'expired';
    const changed = await this.#db.run(
      'UPDATE email_tokens SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL',
      [tokenHash, now],
    );
    return changed === 1 ? { accountId: row.account_id } : 'used';
  }

  async insertKey(key: ApiKeyRecord): Promise<void> {
    await this.#db.run(
      `INSERT INTO api_keys (id, account_id, name, prefix, secret_hash, allowed_ips, status, created_at,
         spend_limit_micros, limit_period, expires_at, allowed_models, limit_subject)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      [
        key.id,
        key.accountId,
        key.name,
        key.prefix,
        key.secretHash,
        key.allowedIps && JSON.stringify(key.allowedIps),
        key.status,
        key.createdAt,
        ...controlParams(key.controls),
        key.limitSubject ?? null,
      ],
    );
  }

  /**
   * The rate-limit windows a new key of the account takes over: those of its most recently revoked key (since
   * `since`) that no active key uses; undefined when there is none. Call it under lockForUpdate, so that two
   * keys created at once never take the same windows.
   */
  async freeLimitSubject(accountId: string, since: number): Promise<string | undefined> {
    const row = await this.#db.get<{ subject: string }>(
      `SELECT COALESCE(limit_subject, id) AS subject FROM api_keys
       WHERE account_id = $1 AND status = 'revoked' AND revoked_at >= $2
         AND COALESCE(limit_subject, id) NOT IN
           (SELECT COALESCE(limit_subject, id) FROM api_keys WHERE account_id = $1 AND status = 'active')
       ORDER BY revoked_at DESC, id LIMIT 1`,
      [accountId, since],
    );
    return row?.subject;
  }

  /** Replaces a key's name, IP allow-list and controls. */
  async updateKey(
    keyId: string,
    name: string,
    allowedIps: string[] | null,
    controls: KeyControls,
  ): Promise<void> {
    await this.#db.run(
      `UPDATE api_keys SET name = $2, allowed_ips = $3, spend_limit_micros = $4, limit_period = $5, expires_at = $6,
         allowed_models = $7 WHERE id = $1`,
      [keyId, name, allowedIps && JSON.stringify(allowedIps), ...controlParams(controls)],
    );
  }

  /** The key with this secret hash and its account, in one round trip. */
  async keyWithAccount(
    secretHash: string,
  ): Promise<{ key: ApiKeyRecord; account: AccountRecord } | undefined> {
    const row = await this.#db.get<KeyRow & { [K in keyof AccountRow as `a_${K}`]: AccountRow[K] }>(
      `SELECT k.*, a.id AS a_id, a.email AS a_email, a.password_hash AS a_password_hash, a.email_verified AS a_email_verified,
              a.status AS a_status, a.plan AS a_plan, a.plan_expires_at AS a_plan_expires_at, a.rpm_limit AS a_rpm_limit,
              a.tpm_limit AS a_tpm_limit, a.daily_token_limit AS a_daily_token_limit,
              a.credit_limit_micros AS a_credit_limit_micros, a.debt_micros AS a_debt_micros, a.held_micros AS a_held_micros,
              a.created_at AS a_created_at, a.last_active_at AS a_last_active_at, a.role AS a_role,
              a.suspended_reason AS a_suspended_reason
       FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.secret_hash = $1`,
      [secretHash],
    );
    if (!row) return undefined;
    const account = toAccount({
      id: row.a_id,
      email: row.a_email,
      password_hash: row.a_password_hash,
      email_verified: row.a_email_verified,
      status: row.a_status,
      plan: row.a_plan,
      plan_expires_at: row.a_plan_expires_at,
      rpm_limit: row.a_rpm_limit,
      tpm_limit: row.a_tpm_limit,
      daily_token_limit: row.a_daily_token_limit,
      credit_limit_micros: row.a_credit_limit_micros,
      debt_micros: row.a_debt_micros,
      held_micros: row.a_held_micros,
      created_at: row.a_created_at,
      last_active_at: row.a_last_active_at,
      role: row.a_role,
      suspended_reason: row.a_suspended_reason,
    });
    return { key: toKey(row), account };
  }

  /**
   * Inside a transaction: locks the account's row until it ends (a row lock on PostgreSQL; SQLite's writers
   * are serialized anyway), so that decisions counting the account's keys are taken one at a time. False
   * when there is no such account.
   */
  async lockForUpdate(accountId: string): Promise<boolean> {
    const row = await this.#db.get(`SELECT id FROM accounts WHERE id = $1 ${this.#db.forUpdate}`, [
      accountId,
    ]);
    return row !== undefined;
  }

  async keysOf(accountId: string): Promise<ApiKeyRecord[]> {
    const rows = await this.#db.all<KeyRow>(
      'SELECT * FROM api_keys WHERE account_id = $1 ORDER BY created_at, id',
      [accountId],
    );
    return rows.map(toKey);
  }

  async keyOf(accountId: string, keyId: string): Promise<ApiKeyRecord | undefined> {
    const row = await this.#db.get<KeyRow>('SELECT * FROM api_keys WHERE account_id = $1 AND id = $2', [
      accountId,
      keyId,
    ]);
    return row && toKey(row);
  }

  async revokeKey(keyId: string, now: number): Promise<void> {
    await this.#db.run(
      `UPDATE api_keys SET status = 'revoked', revoked_at = $2 WHERE id = $1 AND status = 'active'`,
      [keyId, now],
    );
  }

  async replaceKeySecret(keyId: string, secretHash: string, prefix: string): Promise<void> {
    await this.#db.run('UPDATE api_keys SET secret_hash = $2, prefix = $3 WHERE id = $1', [
      keyId,
      secretHash,
      prefix,
    ]);
  }
}
