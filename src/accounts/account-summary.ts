import type { HoldBook } from '../billing/hold-book.ts';
import { billingStanding, type Standing } from '../billing/standing.ts';
import type { Config } from '../core/config.ts';
import { effectiveLimits } from '../billing/effective-limits.ts';
import type { LimitSet } from '../core/rate-limits.ts';
import type { Balance } from '../store/ledger-repo.ts';
import type { AccountRecord, CreditGrant } from '../core/records.ts';
import type { Store } from '../store/store.ts';
import { utcDay } from '../core/time.ts';

/** An account as its holder sees it: limits, balance, grants, today's tokens and whether it may spend. */
export interface AccountSummary {
  account: AccountRecord;
  limits: LimitSet;
  /** The stored balance with this process's in-flight holds counted. */
  balance: Balance;
  /** Unexpired grants, soonest expiry first. */
  grants: CreditGrant[];
  dailyTokensUsed: number;
  standing: Standing;
}

/**
 * Reads the summary of an account at `now` (`cached` is the authenticated copy, used only if the row is
 * gone); the balance counts the hold book's holds of requests in flight too (in this process, or in Redis).
 */
export async function readAccountSummary(
  parts: { store: Store; holds: HoldBook; config: Config },
  cached: AccountRecord,
  now: number,
): Promise<AccountSummary> {
  const { store, holds, config } = parts;
  const account = (await store.accounts.byId(cached.id)) ?? cached;
  const [stored, grants, dailyTokensUsed, inFlight] = await Promise.all([
    store.ledger.balance(account.id, now),
    store.ledger.liveGrants(account.id, now),
    store.usage.dayTokens(account.id, utcDay(now)),
    // Holds of requests in flight outside the database's hold rows (in this process, or in Redis).
    holds.heldMicros(account.id),
  ]);
  const balance = {
    ...stored,
    heldMicros: stored.heldMicros + inFlight,
    availableMicros: stored.availableMicros - inFlight,
  };
  return {
    account,
    limits: effectiveLimits(config.plans, account),
    balance,
    grants,
    dailyTokensUsed,
    standing: billingStanding(config, account, now, balance),
  };
}
