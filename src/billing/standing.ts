import type { Config } from '../core/config.ts';
import type { Balance } from '../store/ledger-repo.ts';
import type { AccountRecord } from '../core/records.ts';
import { planOf } from './plan-of.ts';

/** Whether an account may spend, and if not, why (a 402's message). */
export type Standing =
  | { ok: true }
  | {
      ok: false;
      reason: 'subscription_expired' | 'trial_expired' | 'insufficient_balance' | 'email_unverified';
      message: string;
    };

/** What the standing rules read from the configuration. */
export type StandingConfig = Pick<Config, 'plans'> & {
  security: Pick<Config['security'], 'requireVerifiedEmail'>;
};

/**
 * The account's standing at `now`. Without a balance, only the rules that hold whatever the balance is (the
 * paid period ended, the trial's address is unverified): what admission checks before it counts anything.
 */
export function billingStanding(
  config: StandingConfig,
  account: AccountRecord,
  now: number,
  balance?: Balance,
): Standing {
  const plan = planOf(config.plans, account);
  if (account.planExpiresAt !== null && account.planExpiresAt <= now) {
    return {
      ok: false,
      reason: 'subscription_expired',
      message: `your ${plan.name} plan ended on ${new Date(account.planExpiresAt).toISOString()} without renewal; renew it or buy a plan`,
    };
  }
  // The trial credit is spendable only from a verified address when mail can reach one (docs/security.md).
  if (config.security.requireVerifiedEmail && account.plan === 'free_trial' && !account.emailVerified) {
    return {
      ok: false,
      reason: 'email_unverified',
      message:
        'verify your e-mail address to use the free trial credit (the token is in the e-mail we sent), or buy a plan',
    };
  }
  if (balance === undefined || balance.availableMicros > 0) return { ok: true };
  if (account.plan === 'free_trial' && balance.creditMicros <= 0) {
    return {
      ok: false,
      reason: 'trial_expired',
      message: 'your free trial credit has expired or is used up; buy a plan or top up',
    };
  }
  return {
    ok: false,
    reason: 'insufficient_balance',
    message: 'insufficient balance; top up or wait for requests in flight to finish',
  };
}
