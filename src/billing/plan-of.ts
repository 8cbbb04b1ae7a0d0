import type { PlanConfig, PlanId } from '../core/config.ts';
import type { AccountRecord } from '../core/records.ts';

/** The account's plan as configured; an account on a plan the config no longer has is on the Free Trial. */
export function planOf(plans: ReadonlyMap<PlanId, PlanConfig>, account: AccountRecord): PlanConfig {
  return plans.get(account.plan) ?? (plans.get('free_trial') as PlanConfig);
}
