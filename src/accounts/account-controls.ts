import type { HoldBook } from '../billing/hold-book.ts';
import { applyPlan } from '../billing/apply-plan.ts';
import { grantCredit } from '../billing/grant-credit.ts';
import type { Config, PlanId } from '../core/config.ts';
import { GatewayError } from '../core/gateway-error.ts';
import type { Clock } from '../core/ids.ts';
import { DAY_MS } from '../core/time.ts';
import type { LimitOverrides } from '../store/accounts-repo.ts';
import type { AccountRecord, CreditGrant } from '../core/records.ts';
import type { Store } from '../store/store.ts';
import { type AccountSummary, readAccountSummary } from './account-summary.ts';
import type { KeyTarget } from './key-invalidation.ts';

/** How long the operator's credit lasts when no expiry is given. */
const ADMIN_CREDIT_VALIDITY_MS = 365 * DAY_MS;

export interface AccountControlsOptions {
  store: Store;
  config: Config;
  clock: Clock;
  /** Holds of requests in flight, which an account's summary counts. */
  holds: HoldBook;
  invalidate: (target: KeyTarget) => Promise<void>;
}

/** An account as a whole: its summary, and the operator's controls (status, plan, limits, credit). */
export class AccountControls {
  readonly #o: AccountControlsOptions;

  constructor(options: AccountControlsOptions) {
    this.#o = options;
  }

  async listAccounts(
    search: string,
    limit: number,
    offset: number,
  ): Promise<{ accounts: AccountRecord[]; total: number }> {
    return this.#o.store.accounts.list(search, limit, offset);
  }

  /** The account as its holder sees it now (`GET /api/account`); `cached` is the authenticated copy. */
  async summary(cached: AccountRecord): Promise<AccountSummary> {
    const { store, holds, config, clock } = this.#o;
    return readAccountSummary({ store, holds, config }, cached, clock());
  }

  /**
   * The operator's credit to an account (404 if none): `amountMicros` until `expiresAt`, a year from now when
   * not given (400 unless in the future).
   */
  async grantCredit(accountId: string, amountMicros: number, expiresAt?: number): Promise<CreditGrant> {
    const now = this.#o.clock();
    const account = await this.account(accountId);
    const until = expiresAt ?? now + ADMIN_CREDIT_VALIDITY_MS;
    if (!(until > now)) throw new GatewayError('invalid_request', 'body.expires_at must be in the future');
    return grantCredit(this.#o.store.ledger, {
      accountId: account.id,
      kind: 'admin',
      amountMicros,
      expiresAt: until,
      source: 'admin',
      now,
    });
  }

  async account(id: string): Promise<AccountRecord> {
    const account = await this.#o.store.accounts.byId(id);
    if (!account) throw new GatewayError('not_found', `no account ${id}`);
    return account;
  }

  async setStatus(id: string, status: 'active' | 'suspended'): Promise<AccountRecord> {
    if (!(await this.#o.store.accounts.setStatus(id, status)))
      throw new GatewayError('not_found', `no account ${id}`);
    await this.#o.invalidate({ accountId: id });
    return this.account(id);
  }

  async setPlan(id: string, planId: PlanId): Promise<AccountRecord> {
    const { store, config, clock } = this.#o;
    const plan = config.plans.get(planId);
    if (!plan)
      throw new GatewayError('invalid_request', `plan must be one of ${[...config.plans.keys()].join(', ')}`);
    const found = await store.transaction(async (tx) => applyPlan(tx, id, plan, clock(), 'admin'));
    if (!found) throw new GatewayError('not_found', `no account ${id}`);
    await this.#o.invalidate({ accountId: id });
    return this.account(id);
  }

  async setLimits(id: string, limits: LimitOverrides): Promise<AccountRecord> {
    if (!(await this.#o.store.accounts.setLimits(id, limits)))
      throw new GatewayError('not_found', `no account ${id}`);
    await this.#o.invalidate({ accountId: id });
    return this.account(id);
  }
}
