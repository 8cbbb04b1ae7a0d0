import type { AccountRecord, ApiKeyRecord } from '../store/records.ts';

export interface CachedKey {
  key: ApiKeyRecord;
  account: AccountRecord;
  expiresAt: number;
}

/**
 * The in-process cache of key lookups, by secret hash. Revocations, suspensions and plan changes
 * invalidate it at once (on other instances through the bus); the TTL bounds staleness if a message is lost.
 */
export class KeyCache {
  readonly #byHash = new Map<string, CachedKey>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;

  constructor(options: { ttlMs?: number; maxEntries?: number } = {}) {
    this.#ttlMs = options.ttlMs ?? 30_000;
    this.#maxEntries = options.maxEntries ?? 100_000;
  }

  get(hash: string, now: number): CachedKey | undefined {
    const entry = this.#byHash.get(hash);
    if (entry && entry.expiresAt > now) return entry;
    if (entry) this.#byHash.delete(hash);
    return undefined;
  }

  set(hash: string, key: ApiKeyRecord, account: AccountRecord, now: number): void {
    if (this.#byHash.size >= this.#maxEntries) {
      const oldest = this.#byHash.keys().next();
      if (!oldest.done) this.#byHash.delete(oldest.value);
    }
    this.#byHash.set(hash, { key, account, expiresAt: now + this.#ttlMs });
  }

  /** Drops every entry of the account (all its keys), or of one key. */
  invalidate(target: { accountId?: string; keyId?: string }): void {
    for (const [hash, entry] of this.#byHash) {
      if (entry.account.id === target.accountId || entry.key.id === target.keyId) this.#byHash.delete(hash);
    }
  }

  clear(): void {
    this.#byHash.clear();
  }
}
