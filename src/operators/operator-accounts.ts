import type { AccountsService } from '../accounts/accounts-service.ts';
import { createSecret } from '../accounts/api-key-secret.ts';
import type { KeyCache } from '../accounts/key-cache.ts';
import type { Bus } from '../shared/bus.ts';
import { GatewayError } from '../core/gateway-error.ts';
import type { Clock } from '../core/ids.ts';
import type { AccountQuery } from '../store/admin-accounts-repo.ts';
import { utcDay } from '../store/ledger-repo.ts';
import type {
  AccountRecord,
  ApiKeyRecord,
  CreditGrant,
  OrderRecord,
  WebhookDelivery,
} from '../core/records.ts';
import type { Store } from '../store/store.ts';
import type { UsageRow } from '../store/usage-repo.ts';
import { DAY_MS } from '../core/time.ts';

const EMAIL_TOKEN_TTL_MS = 2 * DAY_MS;

/** An account with its balance (credit minus debt, µUSD). */
export interface AccountWithBalance {
  account: AccountRecord;
  balanceMicros: number;
}

/** Everything an operator's account page shows. */
export interface AccountDetail extends AccountWithBalance {
  grants: CreditGrant[];
  keys: { key: ApiKeyRecord; lastUsedAt: number | null }[];
  usageByDay: UsageRow[];
  orders: OrderRecord[];
  deliveries: WebhookDelivery[];
}

/** The operators' work on accounts: find, inspect, suspend with a reason, roles, keys, verification mail. */
export class OperatorAccounts {
  readonly #o: OperatorAccountsOptions;

  constructor(options: OperatorAccountsOptions) {
    this.#o = options;
  }

  async search(query: AccountQuery): Promise<{ accounts: AccountWithBalance[]; total: number }> {
    const page = await this.#o.store.adminAccounts.search(query);
    return { accounts: await this.#withBalances(page.accounts), total: page.total };
  }

  async withBalance(account: AccountRecord): Promise<AccountWithBalance> {
    const [found] = await this.#withBalances([account]);
    return found as AccountWithBalance;
  }

  async detail(id: string): Promise<AccountDetail> {
    const { store, clock } = this.#o;
    const account = await this.#o.accounts.account(id);
    const now = clock();
    const keys = await store.accounts.keysOf(id);
    const lastUsed = await store.usage.lastUsed(keys.map((key) => key.id));
    return {
      ...(await this.withBalance(account)),
      grants: await store.adminAccounts.grantsOf(id),
      keys: keys.map((key) => ({ key, lastUsedAt: lastUsed.get(key.id) ?? null })),
      usageByDay: await store.usage.summary(id, utcDay(now - 29 * DAY_MS), utcDay(now), 'day'),
      orders: await store.payments.ordersOf(id),
      deliveries: await store.webhooks.deliveriesOf(id, 50),
    };
  }

  /** Suspends the account (its keys and sessions are refused at once, on every instance). */
  async suspend(id: string, reason: string | null): Promise<AccountRecord> {
    await this.#o.accounts.setStatus(id, 'suspended');
    await this.#o.store.adminAccounts.setSuspendedReason(id, reason);
    return this.#o.accounts.account(id);
  }

  async unsuspend(id: string): Promise<AccountRecord> {
    await this.#o.accounts.setStatus(id, 'active');
    await this.#o.store.adminAccounts.setSuspendedReason(id, null);
    return this.#o.accounts.account(id);
  }

  /** Makes the account with this e-mail an operator (or, with 'user', takes the role away). */
  async setRole(id: string, role: 'user' | 'operator'): Promise<AccountRecord> {
    if (!(await this.#o.store.adminAccounts.setRole(id, role)))
      throw new GatewayError('not_found', `no account ${id}`);
    // Cached keys carry the account, and with it the role: a revoked operator's key must stop at once.
    this.#o.cache.invalidate({ accountId: id });
    await this.#o.bus.publish({ accountId: id });
    return this.#o.accounts.account(id);
  }

  /**
   * Takes the operator role away. An operator may not take its own (`by` is the acting operator's account, null
   * for the admin key): another operator or the admin key can, so the console never loses its last operator
   * by a slip.
   */
  async revokeOperator(id: string, by: string | null): Promise<AccountRecord> {
    if (id === by)
      throw new GatewayError(
        'conflict',
        'an operator cannot remove its own operator role; another operator or the admin key can',
        { param: 'id' },
      );
    return this.setRole(id, 'user');
  }

  async byEmail(email: string): Promise<AccountRecord> {
    const account = await this.#o.store.accounts.byEmail(email.trim().toLowerCase());
    if (!account) throw new GatewayError('not_found', `no account with the e-mail ${email}`);
    return account;
  }

  async operators(): Promise<AccountRecord[]> {
    return this.#o.store.adminAccounts.operators();
  }

  async keys(id: string): Promise<ApiKeyRecord[]> {
    await this.#o.accounts.account(id);
    return this.#o.accounts.listKeys(id);
  }

  /**
   * Queues a new verification e-mail with a link under `baseUrl` (the text of the account's own resend; earlier
   * tokens stay valid until they expire); 409 when the address is verified already.
   */
  async resendVerification(id: string, baseUrl: string): Promise<void> {
    const { store, clock } = this.#o;
    const account = await this.#o.accounts.account(id);
    if (account.emailVerified) throw new GatewayError('conflict', 'this e-mail address is already verified');
    const now = clock();
    const token = createSecret('ev-');
    await store.transaction(async (tx) => {
      await tx.accounts.insertEmailToken(token.hash, id, now + EMAIL_TOKEN_TTL_MS);
      await tx.mailQueue.enqueue(
        {
          id: `verify:${token.hash.slice(0, 32)}`,
          recipient: account.email,
          subject: 'Verify your Tollgate e-mail address',
          body: `Open this link to verify your e-mail address:\n${baseUrl}/verify-email?token=${token.secret}\n`,
        },
        now,
      );
    });
    this.#o.mailQueued();
  }

  async #withBalances(accounts: readonly AccountRecord[]): Promise<AccountWithBalance[]> {
    const credit = await this.#o.store.adminAccounts.creditOf(
      accounts.map((account) => account.id),
      this.#o.clock(),
    );
    return accounts.map((account) => ({
      account,
      balanceMicros: (credit.get(account.id) ?? 0) - account.debtMicros,
    }));
  }
}

export interface OperatorAccountsOptions {
  store: Store;
  accounts: AccountsService;
  clock: Clock;
  cache: KeyCache;
  bus: Bus;
  /** Told when mail was queued, so the sender runs now rather than at its next tick. */
  mailQueued: () => void;
}
