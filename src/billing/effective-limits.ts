import { planOf } from '../billing/plan-of.ts';
import type { PlanConfig, PlanId } from '../core/config.ts';
import type { AccountRecord } from '../core/records.ts';
import type { LimitSet } from '../core/rate-limits.ts';

/** The account's plan limits with the operator's per-account overrides applied (null: no limit). */
export function effectiveLimits(plans: ReadonlyMap<PlanId, PlanConfig>, account: AccountRecord): LimitSet {
  const plan = planOf(plans, account);
  return {
    requestsPerMinute: account.rpmLimit ?? plan.requestsPerMinute,
    tokensPerMinute: account.tpmLimit ?? plan.tokensPerMinute,
    dailyTokens: account.dailyTokenLimit ?? plan.dailyTokens,
  };
}
