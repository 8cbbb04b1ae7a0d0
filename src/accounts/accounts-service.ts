import { timingSafeEqual } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import type { Logger } from 'pino';
import { applyPlan } from '../billing/apply-plan.ts';
import { grantCredit } from '../billing/grant-credit.ts';
import type { HoldBook } from '../billing/hold-book.ts';
import type { Config, PlanId } from '../core/config.ts';
import type { Bus } from '../shared/bus.ts';
import { GatewayError } from '../core/gateway-error.ts';
import { type Clock, newId } from '../core/ids.ts';
import type { Limiter } from '../core/rate-limits.ts';
import type { LimitOverrides } from '../store/accounts-repo.ts';
import {
  type AccountRecord,
  type ApiKeyRecord,
  type CreditGrant,
  type KeyControls,
  newAccountRecord,
  NO_KEY_CONTROLS,
} from '../core/records.ts';
import type { Store } from '../store/store.ts';
import { StoreUnavailableError } from '../store/db.ts';
import { type AccountSummary, readAccountSummary } from './account-summary.ts';
import { createSecret, hashSecret, isPlausibleSecret } from './api-key-secret.ts';
import type { KeyCache } from './key-cache.ts';
import { FailedAuthThrottle } from './failed-auth-throttle.ts';
import { presentKeyControls, refuseExpiredKey } from './key-controls.ts';
import { type KeyStatus, readKeyStatus } from './key-status.ts';
import { canonicalMailbox, claimTrialMailbox } from './mailbox.ts';
import type { Mailer } from './mailer.ts';
import { hashPassword } from './passwords.ts';
import { DAY_MS } from '../core/time.ts';

const EMAIL_TOKEN_TTL_MS = 2 * DAY_MS;
const ADMIN_KEY_SETTING = 'admin_key_hash';
/** How long the operator's credit lasts when no expiry is given. */
const ADMIN_CREDIT_VALIDITY_MS = 365 * DAY_MS;

/** Who a request is: the operator, or a user's key and its account. */
export type Principal = { kind: 'admin' } | { kind: 'user'; key: ApiKeyRecord; account: AccountRecord };

export interface IssuedKey {
  id: string;
  name: string;
  prefix: string;
  /** The secret: returned once, at creation or rotation. */
  key: string;
  allowed_ips: string[] | null;
  created_at: string;
  /** Per-key controls, as `GET /api/keys` shows them. */
  limit_usd: number | null;
  limit_period: string | null;
  expires_at: string | null;
  allowed_models: string[] | null;
}

/** A change to a key: what is given replaces what it had (null removes a rule). */
export interface KeyChange {
  name?: string;
  allowedIps?: string[] | null;
  spendLimitMicros?: number | null;
  limitPeriod?: KeyControls['limitPeriod'];
  expiresAt?: number | null;
  allowedModels?: string[] | null;
}

export interface AccountsOptions {
  store: Store;
  config: Config;
  clock: Clock;
  mailer: Mailer;
  cache: KeyCache;
  bus: Bus;
  logger: Logger;
  /** Counts key creations per account (TOLLGATE_KEY_CREATIONS_PER_MINUTE). */
  limiter: Limiter;
  /** Holds of requests in flight, which an account's summary counts. */
  holds: HoldBook;
}

/** Registration, verification, authentication, keys and the operator's account controls. */
export class AccountsService {
  readonly #o: AccountsOptions;
  readonly #failedAuth: FailedAuthThrottle;
  #adminHash: Buffer | undefined;
  /** Key lookups under way, by the secret's hash. */
  readonly #lookups = new Map<string, ReturnType<Store['accounts']['keyWithAccount']>>();
  #creations = 0;

  constructor(options: AccountsOptions) {
    this.#o = options;
    this.#failedAuth = new FailedAuthThrottle(options.limiter, options.clock);
    options.bus.subscribe((message) => options.cache.invalidate(message));
  }

  /**
   * Makes sure an admin key exists: the one `TOLLGATE_ADMIN_KEY` gives, or one created on the first start.
   * Resolves to the new secret when this call created it (to print once), else undefined.
   */
  async ensureAdminKey(): Promise<string | undefined> {
    const { config, store } = this.#o;
    if (config.adminKey) {
      this.#adminHash = Buffer.from(hashSecret(config.adminKey), 'hex');
      return undefined;
    }
    const fresh = createSecret('tg-admin-');
    const stored = await store.system.settingOnce(ADMIN_KEY_SETTING, fresh.hash);
    this.#adminHash = Buffer.from(stored, 'hex');
    return stored === fresh.hash ? fresh.secret : undefined;
  }

  /** Creates an account on the Free Trial with its trial credit, first key and a verification token. */
  async register(email: string, password: string): Promise<{ account: AccountRecord; apiKey: IssuedKey }> {
    const { store, config, clock, mailer, logger } = this.#o;
    const now = clock();
    const normalized = email.trim().toLowerCase();
    const passwordHash = await hashPassword(password);
    const account = newAccountRecord(newId('acct'), normalized, passwordHash, now);
    const token = createSecret('ev-');
    const issued = await store
      .transaction(async (tx) => {
        if (await tx.accounts.byEmail(normalized))
          throw new GatewayError('conflict', 'an account with this e-mail already exists');
        await tx.accounts.insert(account);
        if (!(await claimTrialMailbox(tx.db, canonicalMailbox(normalized), account.id, now)))
          throw new GatewayError(
            'conflict',
            'an account for this mailbox already exists (a +tag, or dots at Gmail, do not make another mailbox)',
          );
        await grantCredit(tx.ledger, {
          accountId: account.id,
          kind: 'trial',
          amountMicros: config.trialCreditMicros,
          expiresAt: now + config.trialDays * DAY_MS,
          source: 'registration',
          now,
        });
        await tx.accounts.insertEmailToken(token.hash, account.id, now + EMAIL_TOKEN_TTL_MS);
        return this.#insertKey(tx, account.id, 'default', null, now);
      })
      .catch((error: unknown) => {
        // Two registrations racing past the check: the unique index decides, and the loser hears 409.
        if (error instanceof GatewayError) throw error;
        if (/unique|duplicate/i.test(String((error as Error).message))) {
          throw new GatewayError('conflict', 'an account with this e-mail already exists', { cause: error });
        }
        throw error;
      });
    const link = `POST ${config.publicUrl ?? ''}/api/auth/verify-email with {"token":"${token.secret}"}`;
    mailer
      .send({
        to: normalized,
        subject: 'Verify your Tollgate e-mail address',
        text: `Your verification token: ${token.secret}\n${link}`,
      })
      .catch((error: unknown) =>
        logger.warn({ err: error, accountId: account.id }, 'verification e-mail failed'),
      );
    return { account, apiKey: issued };
  }

  /** Marks the token's account verified; an unknown, used or expired token is a 400. */
  async verifyEmail(token: string): Promise<AccountRecord> {
    const { store, clock } = this.#o;
    const result = await store.accounts.consumeEmailToken(hashSecret(token), clock());
    if (typeof result === 'string') {
      const why = { unknown: 'is not valid', used: 'was already used', expired: 'has expired' }[result];
      throw new GatewayError('invalid_request', `verification token ${why}`);
    }
    await store.accounts.markVerified(result.accountId);
    // Cached keys carry the account: a verified address must open the trial credit at once.
    await this.#invalidate({ accountId: result.accountId });
    const account = await store.accounts.byId(result.accountId);
    if (!account) throw new GatewayError('invalid_request', 'verification token is not valid');
    return account;
  }

  /**
   * Resolves a bearer secret to its principal: 401 when unknown, 403 when revoked, suspended or used from
   * an address outside the key's allow-list. Served from the in-process cache after the first lookup.
   */
  async authenticate(secret: string | undefined, clientIp: string): Promise<Principal> {
    return this.authenticateNow(secret, clientIp) ?? this.authenticateStored(secret!, clientIp);
  }

  /**
   * As authenticate, answered in the same call from the in-process cache (no promise, no turn): undefined when
   * the secret is not cached (a first use, the admin key), for authenticate to look up; refusals throw alike.
   */
  authenticateNow(secret: string | undefined, clientIp: string): Principal | undefined {
    if (!secret || !isPlausibleSecret(secret))
      throw new GatewayError('unauthorized', 'missing or invalid API key');
    const now = this.#o.clock();
    const entry = this.#o.cache.get(secret, now);
    return entry && principalOf(entry.key, entry.account, now, clientIp);
  }

  /**
   * A secret authenticateNow did not find in the cache: looked up by its hash (the admin key is never cached, so
   * always checked here). Call it only after authenticateNow answered undefined: that call made the plausibility
   * check and the cache lookup, which this one does not repeat.
   */
  async authenticateStored(secret: string, clientIp: string): Promise<Principal> {
    const { cache, store, clock } = this.#o;
    // An address guessing keys is refused before its guess reaches the store (cached keys never get here).
    this.#failedAuth.refuseIfBlocked(clientIp);
    const now = clock();
    const hash = hashSecret(secret);
    if (this.#adminHash && timingSafeEqual(Buffer.from(hash, 'hex'), this.#adminHash))
      return { kind: 'admin' };
    // A burst of a new key's first requests (a new instance's first seconds) reads it once.
    let lookup = this.#lookups.get(hash);
    if (!lookup) {
      lookup = store.accounts.keyWithAccount(hash).finally(() => this.#lookups.delete(hash));
      this.#lookups.set(hash, lookup);
    }
    // Served stale already (the database failed its last lookup): it stays served while the lookup runs, so a
    // database that hangs rather than refuses holds up no request of it.
    const lapsed = cache.lapsed(secret, now);
    if (lapsed) {
      void lookup.then(
        (fresh) =>
          fresh
            ? cache.set(secret, fresh.key, fresh.account, clock())
            : cache.invalidate({ keyId: lapsed.key.id }),
        (error: unknown) => error instanceof StoreUnavailableError && cache.stale(secret, clock()),
      );
      return principalOf(lapsed.key, lapsed.account, now, clientIp);
    }
    let found;
    try {
      found = await lookup;
    } catch (error) {
      // The database is away: a key this instance knew is still served (what the bus says still applies).
      const stale = error instanceof StoreUnavailableError ? cache.stale(secret, now) : undefined;
      if (!stale) throw error;
      return principalOf(stale.key, stale.account, now, clientIp);
    }
    if (!found) {
      await this.#failedAuth.failed(clientIp);
      throw new GatewayError('unauthorized', 'missing or invalid API key');
    }
    cache.set(secret, found.key, found.account, now);
    return principalOf(found.key, found.account, now, clientIp);
  }

  async listKeys(accountId: string): Promise<ApiKeyRecord[]> {
    return this.#o.store.accounts.keysOf(accountId);
  }

  /**
   * The account's keys with when each was last used and, for an active key with a spending limit, its
   * status (spend this period, what remains); unlimited and revoked keys cost no read.
   */
  async keyOverview(
    accountId: string,
  ): Promise<{ key: ApiKeyRecord; lastUsedAt: number | null; status: KeyStatus | null }[]> {
    const { store, holds, clock } = this.#o;
    const keys = await this.listKeys(accountId);
    const now = clock();
    const lastUsed = await store.usage.lastUsed(keys.map((key) => key.id));
    return Promise.all(
      keys.map(async (key) => ({
        key,
        lastUsedAt: lastUsed.get(key.id) ?? null,
        status:
          key.status !== 'active' || (key.controls?.spendLimitMicros ?? null) === null
            ? null
            : await readKeyStatus(store, holds, key, now),
      })),
    );
  }

  /** The key's spend today, this week, this month and this period, and what its limit still allows. */
  async keyStatus(key: ApiKeyRecord): Promise<KeyStatus> {
    const { store, holds, clock } = this.#o;
    return readKeyStatus(store, holds, key, clock());
  }

  /**
   * Creates a key: at most the plan's active keys (403 past it) and TOLLGATE_KEY_CREATIONS_PER_MINUTE per
   * account (429), since limits are per key and every new key would bring a fresh allowance.
   */
  async createKey(
    accountId: string,
    name: string,
    allowedIps: string[] | null,
    controls: KeyControls = NO_KEY_CONTROLS,
  ): Promise<IssuedKey> {
    const { store, config, clock, limiter } = this.#o;
    const account = await this.account(accountId);
    const cap = config.plans.get(account.plan)?.maxActiveKeys ?? null;
    const activeKeys = async (db: Store): Promise<number> =>
      (await db.accounts.keysOf(accountId)).filter((key) => key.status === 'active').length;
    const refuseCap = (): GatewayError =>
      new GatewayError(
        'forbidden',
        `your plan allows ${cap} active API keys; revoke one or upgrade your plan`,
      );
    if (cap !== null && (await activeKeys(store)) >= cap) throw refuseCap();
    const now = clock();
    const admission = await limiter.admit({
      subject: `key-creation:${accountId}`,
      requestId: `key-creation-${this.#creations++}`,
      limits: {
        requestsPerMinute: config.security.keyCreationsPerMinute,
        tokensPerMinute: null,
        dailyTokens: null,
      },
      tokens: 0,
      now,
    });
    if (!admission.allowed)
      throw new GatewayError(
        'rate_limit_exceeded',
        'too many API keys created in the last minute; retry later',
        {
          ...(admission.retryAfterMs !== undefined ? { retryAfterMs: admission.retryAfterMs } : {}),
        },
      );
    return store.transaction(async (tx) => {
      // Checked again under the account's row lock: creations racing past the first check count one at a time.
      await tx.accounts.lockForUpdate(accountId);
      if (cap !== null && (await activeKeys(tx)) >= cap) throw refuseCap();
      // A key made in place of a revoked one takes over its rate-limit windows (a day's worth matters: the
      // longest window is the UTC day), so revoking and re-creating never brings fresh limits.
      const inherited = await tx.accounts.freeLimitSubject(accountId, now - DAY_MS);
      return this.#insertKey(tx, accountId, name, allowedIps, now, controls, inherited);
    });
  }

  /**
   * Changes a key's name, allow-list or controls (limit, period, expiry, allowed models); the cached key is
   * dropped here and on every instance, so the new rules apply to the next request.
   */
  async updateKey(accountId: string, keyId: string, change: KeyChange): Promise<ApiKeyRecord> {
    const key = await this.#ownKey(accountId, keyId);
    if (key.status === 'revoked')
      throw new GatewayError('invalid_request', 'a revoked key cannot be changed');
    const was = key.controls ?? NO_KEY_CONTROLS;
    const spendLimitMicros =
      change.spendLimitMicros === undefined ? was.spendLimitMicros : change.spendLimitMicros;
    const period = change.limitPeriod === undefined ? was.limitPeriod : change.limitPeriod;
    if (spendLimitMicros === null && change.limitPeriod != null)
      throw new GatewayError(
        'invalid_request',
        'body.limit_period: set limit_usd too (the key has no limit)',
      );
    const controls: KeyControls = {
      spendLimitMicros,
      limitPeriod: spendLimitMicros === null ? null : (period ?? 'never'),
      expiresAt: change.expiresAt === undefined ? was.expiresAt : change.expiresAt,
      allowedModels: change.allowedModels === undefined ? was.allowedModels : change.allowedModels,
    };
    const name = change.name ?? key.name;
    const allowedIps = change.allowedIps === undefined ? key.allowedIps : change.allowedIps;
    await this.#o.store.accounts.updateKey(key.id, name, allowedIps, controls);
    await this.#invalidate({ keyId });
    return { ...key, name, allowedIps, controls };
  }

  async revokeKey(accountId: string, keyId: string): Promise<ApiKeyRecord> {
    const { store, clock } = this.#o;
    const key = await this.#ownKey(accountId, keyId);
    if (key.status === 'revoked') return key;
    const now = clock();
    await store.accounts.revokeKey(key.id, now);
    await this.#invalidate({ keyId });
    // Two revokes racing: the stored time is the one that counts.
    const revoked = await this.#ownKey(accountId, keyId);
    return { ...revoked, status: 'revoked', revokedAt: revoked.revokedAt ?? now };
  }

  /** Gives the key a new secret; the old one stops working at once. */
  async rotateKey(accountId: string, keyId: string): Promise<IssuedKey> {
    const key = await this.#ownKey(accountId, keyId);
    if (key.status === 'revoked')
      throw new GatewayError('invalid_request', 'a revoked key cannot be rotated');
    const fresh = createSecret();
    await this.#o.store.accounts.replaceKeySecret(key.id, fresh.hash, fresh.prefix);
    await this.#invalidate({ keyId });
    return issued(
      key.id,
      key.name,
      fresh.secret,
      fresh.prefix,
      key.allowedIps,
      key.createdAt,
      key.controls ?? NO_KEY_CONTROLS,
    );
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
    await this.#invalidate({ accountId: id });
    return this.account(id);
  }

  async setPlan(id: string, planId: PlanId): Promise<AccountRecord> {
    const { store, config, clock } = this.#o;
    const plan = config.plans.get(planId);
    if (!plan)
      throw new GatewayError('invalid_request', `plan must be one of ${[...config.plans.keys()].join(', ')}`);
    const found = await store.transaction(async (tx) => applyPlan(tx, id, plan, clock(), 'admin'));
    if (!found) throw new GatewayError('not_found', `no account ${id}`);
    await this.#invalidate({ accountId: id });
    return this.account(id);
  }

  async setLimits(id: string, limits: LimitOverrides): Promise<AccountRecord> {
    if (!(await this.#o.store.accounts.setLimits(id, limits)))
      throw new GatewayError('not_found', `no account ${id}`);
    await this.#invalidate({ accountId: id });
    return this.account(id);
  }

  /** Drops cached keys here and, through the bus, on every other instance. */
  async #invalidate(target: { accountId?: string; keyId?: string }): Promise<void> {
    this.#o.cache.invalidate(target);
    await this.#o.bus
      .publish(target)
      .catch((error: unknown) => this.#o.logger.warn({ err: error }, 'invalidation not published'));
  }

  async #ownKey(accountId: string, keyId: string): Promise<ApiKeyRecord> {
    const key = await this.#o.store.accounts.keyOf(accountId, keyId);
    if (!key) throw new GatewayError('not_found', `no key ${keyId}`);
    return key;
  }

  async #insertKey(
    store: Store,
    accountId: string,
    name: string,
    allowedIps: string[] | null,
    now: number,
    controls: KeyControls = NO_KEY_CONTROLS,
    limitSubject?: string,
  ): Promise<IssuedKey> {
    const fresh = createSecret();
    const id = newId('key');
    await store.accounts.insertKey({
      id,
      accountId,
      name,
      prefix: fresh.prefix,
      secretHash: fresh.hash,
      allowedIps,
      status: 'active',
      createdAt: now,
      revokedAt: null,
      controls,
      ...(limitSubject === undefined ? {} : { limitSubject }),
    });
    return issued(id, name, fresh.secret, fresh.prefix, allowedIps, now, controls);
  }
}

function issued(
  id: string,
  name: string,
  key: string,
  prefix: string,
  allowedIps: string[] | null,
  createdAt: number,
  controls: KeyControls,
): IssuedKey {
  return {
    id,
    name,
    prefix,
    key,
    allowed_ips: allowedIps,
    created_at: new Date(createdAt).toISOString(),
    ...presentKeyControls(controls),
  };
}

/** Whether an address falls inside one of the CIDR blocks (IPv4-mapped IPv6 addresses count as IPv4). */
export function ipAllowed(cidrs: readonly string[], ip: string): boolean {
  const address = ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;
  const family = isIP(address);
  if (family === 0) return false;
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [network = '', bits] = cidr.split('/');
    const networkFamily = isIP(network);
    if (networkFamily === 0) continue;
    const type = networkFamily === 4 ? 'ipv4' : 'ipv6';
    list.addSubnet(network, bits === undefined ? (networkFamily === 4 ? 32 : 128) : Number(bits), type);
  }
  return list.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** Whether a string is an IPv4 or IPv6 CIDR block (or a single address). */
export function isCidr(value: string): boolean {
  const [network = '', bits, extra] = value.split('/');
  const family = isIP(network);
  if (family === 0 || extra !== undefined) return false;
  if (bits === undefined) return true;
  const n = Number(bits);
  return /^\d+$/.test(bits) && n >= 0 && n <= (family === 4 ? 32 : 128);
}

/** A user key's principal, or the refusal its state or the client's address calls for (403). */
function principalOf(key: ApiKeyRecord, account: AccountRecord, now: number, clientIp: string): Principal {
  if (key.status === 'revoked') throw new GatewayError('forbidden', 'this API key has been revoked');
  refuseExpiredKey(key, now);
  if (account.status === 'suspended') throw new GatewayError('forbidden', 'this account is suspended');
  if (key.allowedIps && !ipAllowed(key.allowedIps, clientIp))
    throw new GatewayError('forbidden', `this API key may not be used from ${clientIp}`);
  return { kind: 'user', key, account };
}
