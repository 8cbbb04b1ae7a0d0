import type { AccountRecord, ApiKeyRecord } from '../core/records.ts';

/** How long past its lifetime a cached key may still be used while the database is unreachable. */
export const MAX_STALE_MS = 60 * 60_000;
/** While a key is used stale, how often the database is asked again (one lookup, not one per request). */
export const STALE_RECHECK_MS = 5_000;

export interface CachedKey {
  key: ApiKeyRecord;
  account: AccountRecord;
  expiresAt: number;
  /** When its lifetime ended, once it is used stale (expiresAt then says when to ask the database again). */
  lapsedAt?: number;
}

const lapsed = (entry: CachedKey): number => entry.lapsedAt ?? entry.expiresAt;

/**
 * The in-process cache of key lookups, by the presented secret (process memory only, never stored or
 * logged), so a repeat caller costs a map lookup instead of a SHA-256. Revocations, suspensions and plan changes
 * invalidate it at once (on other instances through the bus); the TTL bounds staleness if a message is lost.
 */
export class KeyCache {
  readonly #bySecret = new Map<string, CachedKey>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;

  constructor(options: { ttlMs?: number; maxEntries?: number } = {}) {
    this.#ttlMs = options.ttlMs ?? 30_000;
    this.#maxEntries = options.maxEntries ?? 100_000;
  }

  get(secret: string, now: number): CachedKey | undefined {
    const entry = this.#bySecret.get(secret);
    if (entry && entry.expiresAt > now) return entry;
    if (entry && lapsed(entry) + MAX_STALE_MS <= now) this.#bySecret.delete(secret);
    return undefined;
  }

  /**
   * An entry past its lifetime, for use only while the database cannot be asked: it is still invalidated by
   * every revocation, suspension and plan change the bus carries. Undefined once it is MAX_STALE_MS past it.
   * An entry used stale is served from the cache again for STALE_RECHECK_MS before the database is asked.
   */
  stale(secret: string, now: number): CachedKey | undefined {
    const entry = this.#bySecret.get(secret);
    if (!entry || lapsed(entry) + MAX_STALE_MS <= now) return undefined;
    entry.lapsedAt = lapsed(entry);
    entry.expiresAt = Math.min(now + STALE_RECHECK_MS, entry.lapsedAt + MAX_STALE_MS);
    return entry;
  }

  /** An entry already served stale (its last lookup failed), while it may still be: undefined otherwise. */
  lapsed(secret: string, now: number): CachedKey | undefined {
    const entry = this.#bySecret.get(secret);
    return entry?.lapsedAt !== undefined && entry.lapsedAt + MAX_STALE_MS > now ? entry : undefined;
  }

  set(secret: string, key: ApiKeyRecord, account: AccountRecord, now: number): void {
    if (this.#bySecret.size >= this.#maxEntries) {
      const oldest = this.#bySecret.keys().next();
      if (!oldest.done) this.#bySecret.delete(oldest.value);
    }
    this.#bySecret.set(secret, { key, account, expiresAt: now + this.#ttlMs });
  }

  /** Drops every entry of the account (all its keys), or of one key. */
  invalidate(target: { accountId?: string; keyId?: string }): void {
    for (const [secret, entry] of this.#bySecret) {
      if (entry.account.id === target.accountId || entry.key.id === target.keyId)
        this.#bySecret.delete(secret);
    }
  }

  clear(): void {
    this.#bySecret.clear();
  }
}
