import type { PlanConfig } from '../core/config.ts';
import type { Store } from '../store/store.ts';
import { grantCredit } from './grant-credit.ts';
import { DAY_MS } from '../core/time.ts';

/** A paid plan's period. */
export const PLAN_PERIOD_MS = 30 * DAY_MS;

/**
 * Puts an account on a plan: a paid plan starts a 30-day period (extending an unexpired one of the same
 * plan) and grants its allowance until the period ends. Call inside a transaction with what caused it.
 * Resolves to false when there is no such account.
 */
export async function applyPlan(
  store: Store,
  accountId: string,
  plan: PlanConfig,
  now: number,
  source: string,
): Promise<boolean> {
  const account = await store.accounts.byId(accountId);
  if (!account) return false;
  const paid = plan.monthlyPriceMicros > 0 || plan.monthlyAllowanceMicros > 0;
  let expiresAt: number | null = null;
  if (paid) {
    const start =
      account.plan === plan.id && account.planExpiresAt !== null && account.planExpiresAt > now
        ? account.planExpiresAt
        : now;
    expiresAt = start + PLAN_PERIOD_MS;
    if (plan.monthlyAllowanceMicros > 0) {
      await grantCredit(store.ledger, {
        accountId,
        kind: 'plan',
        amountMicros: plan.monthlyAllowanceMicros,
        expiresAt,
        source,
        now,
      });
    }
  }
  await store.accounts.setPlan(accountId, plan.id, expiresAt);
  return true;
}
