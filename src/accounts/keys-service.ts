import type { Config } from '../core/config.ts';
import type { HoldBook } from '../billing/hold-book.ts';
import type { Limiter } from '../core/rate-limits.ts';
import { GatewayError } from '../core/gateway-error.ts';
import type { Clock } from '../core/ids.ts';
import { DAY_MS } from '../core/time.ts';
import { type ApiKeyRecord, type KeyControls, NO_KEY_CONTROLS } from '../core/records.ts';
import type { Store } from '../store/store.ts';
import { createSecret } from './api-key-secret.ts';
import { insertKey, issued, type IssuedKey } from './issue-key.ts';
import type { KeyTarget } from './key-invalidation.ts';
import { type KeyStatus, readKeyStatus } from './key-status.ts';

/** A change to a key: what is given replaces what it had (null removes a rule). */
export interface KeyChange {
  name?: string;
  allowedIps?: string[] | null;
  spendLimitMicros?: number | null;
  limitPeriod?: KeyControls['limitPeriod'];
  expiresAt?: number | null;
  allowedModels?: string[] | null;
}

export interface KeysOptions {
  store: Store;
  config: Config;
  clock: Clock;
  /** Counts key creations per account (TOLLGATE_KEY_CREATIONS_PER_MINUTE). */
  limiter: Limiter;
  /** Holds of requests in flight, which a key's status counts. */
  holds: HoldBook;
  invalidate: (target: KeyTarget) => Promise<void>;
}

/** An account's API keys: list, status, create, change, revoke, rotate. */
export class KeysService {
  readonly #o: KeysOptions;
  #creations = 0;

  constructor(options: KeysOptions) {
    this.#o = options;
  }

  /** The account's keys; with `onlyMember`, that member's alone. */
  async listKeys(accountId: string, onlyMember?: string): Promise<ApiKeyRecord[]> {
    const keys = await this.#o.store.accounts.keysOf(accountId);
    return onlyMember === undefined ? keys : keys.filter((key) => key.memberId === onlyMember);
  }

  /**
   * The account's keys with when each was last used and, for an active key with a spending limit, its
   * status (spend this period, what remains); unlimited and revoked keys cost no read.
   */
  async keyOverview(
    accountId: string,
    onlyMember?: string,
  ): Promise<{ key: ApiKeyRecord; lastUsedAt: number | null; status: KeyStatus | null }[]> {
    const { store, holds, clock } = this.#o;
    const keys = await this.listKeys(accountId, onlyMember);
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
    memberId?: string,
  ): Promise<IssuedKey> {
    const { store, config, clock, limiter } = this.#o;
    const account = await store.accounts.byId(accountId);
    if (!account) throw new GatewayError('not_found', `no account ${accountId}`);
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
      return insertKey(tx, { accountId, name, allowedIps, controls, limitSubject: inherited, memberId }, now);
    });
  }

  /**
   * Changes a key's name, allow-list or controls (limit, period, expiry, allowed models); the cached key is
   * dropped here and on every instance, so the new rules apply to the next request.
   */
  async updateKey(
    accountId: string,
    keyId: string,
    change: KeyChange,
    onlyMember?: string,
  ): Promise<ApiKeyRecord> {
    const key = await this.#ownKey(accountId, keyId, onlyMember);
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
    await this.#o.invalidate({ keyId });
    return { ...key, name, allowedIps, controls };
  }

  async revokeKey(accountId: string, keyId: string, onlyMember?: string): Promise<ApiKeyRecord> {
    const { store, clock } = this.#o;
    const key = await this.#ownKey(accountId, keyId, onlyMember);
    if (key.status === 'revoked') return key;
    const now = clock();
    await store.accounts.revokeKey(key.id, now);
    await this.#o.invalidate({ keyId });
    // Two revokes racing: the stored time is the one that counts.
    const revoked = await this.#ownKey(accountId, keyId);
    return { ...revoked, status: 'revoked', revokedAt: revoked.revokedAt ?? now };
  }

  /** Gives the key a new secret; the old one stops working at once. */
  async rotateKey(accountId: string, keyId: string, onlyMember?: string): Promise<IssuedKey> {
    const key = await this.#ownKey(accountId, keyId, onlyMember);
    if (key.status === 'revoked')
      throw new GatewayError('invalid_request', 'a revoked key cannot be rotated');
    const fresh = createSecret();
    await this.#o.store.accounts.replaceKeySecret(key.id, fresh.hash, fresh.prefix);
    await this.#o.invalidate({ keyId });
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

  /** The account's key (with `onlyMember`, only if that member's: another member's key is not found). */
  async #ownKey(accountId: string, keyId: string, onlyMember?: string): Promise<ApiKeyRecord> {
    const key = await this.#o.store.accounts.keyOf(accountId, keyId);
    if (!key || (onlyMember !== undefined && key.memberId !== onlyMember))
      throw new GatewayError('not_found', `no key ${keyId}`);
    return key;
  }
}
