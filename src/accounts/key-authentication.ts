import { timingSafeEqual } from 'node:crypto';
import type { Config } from '../core/config.ts';
import type { Limiter } from '../core/rate-limits.ts';
import { GatewayError } from '../core/gateway-error.ts';
import type { Clock } from '../core/ids.ts';
import { StoreUnavailableError } from '../store/db.ts';
import type { AccountRecord, ApiKeyRecord } from '../core/records.ts';
import type { Store } from '../store/store.ts';
import { createSecret, hashSecret, isPlausibleSecret } from './api-key-secret.ts';
import { ipAllowed } from './cidr.ts';
import { FailedAuthThrottle } from './failed-auth-throttle.ts';
import type { KeyCache } from './key-cache.ts';
import { refuseExpiredKey } from './key-controls.ts';

const ADMIN_KEY_SETTING = 'admin_key_hash';

/** Who a request is: the operator, or a user's key and its account. */
export type Principal = { kind: 'admin' } | { kind: 'user'; key: ApiKeyRecord; account: AccountRecord };

export interface KeyAuthenticationOptions {
  store: Store;
  config: Config;
  clock: Clock;
  cache: KeyCache;
  /** Counts failed guesses per address. */
  limiter: Limiter;
}

/** Who a bearer secret is: the admin key, or a user's key served from the cache or the store. */
export class KeyAuthentication {
  readonly #o: KeyAuthenticationOptions;
  readonly #failedAuth: FailedAuthThrottle;
  #adminHash: Buffer | undefined;
  /** Key lookups under way, by the secret's hash. */
  readonly #lookups = new Map<string, ReturnType<Store['accounts']['keyWithAccount']>>();

  constructor(options: KeyAuthenticationOptions) {
    this.#o = options;
    this.#failedAuth = new FailedAuthThrottle(options.limiter, options.clock);
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
}

/** A user key's principal, or the refusal its state or the client's address calls for (403). */
function principalOf(key: ApiKeyRecord, account: AccountRecord, now: number, clientIp: string): Principal {
  if (key.status === 'revoked') throw new GatewayError('forbidden', 'this API key has been revoked');
  refuseExpiredKey(key, now);
  // The key's member left the organization (its keys are revoked then; this covers a key read in between).
  if (key.memberId && !key.member)
    throw new GatewayError('forbidden', 'this API key belongs to a member who left the organization');
  if (account.status === 'suspended') throw new GatewayError('forbidden', 'this account is suspended');
  if (key.allowedIps && !ipAllowed(key.allowedIps, clientIp))
    throw new GatewayError('forbidden', `this API key may not be used from ${clientIp}`);
  return { kind: 'user', key, account };
}
