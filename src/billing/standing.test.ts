import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_PLANS } from '../config/defaults.ts';
import { effectiveLimits } from './effective-limits.ts';
import type { Balance } from '../store/ledger-repo.ts';
import { type AccountRecord, newAccountRecord } from '../core/records.ts';
import { billingStanding, type StandingConfig } from './standing.ts';

const NOW = Date.parse('2026-11-03T10:00:00Z');
const config = (requireVerifiedEmail: boolean): StandingConfig => ({
  plans: DEFAULT_PLANS,
  security: { requireVerifiedEmail },
});
const account = (change: Partial<AccountRecord> = {}): AccountRecord => ({
  ...newAccountRecord('acct_1', 'a@example.com', 'x', 0),
  emailVerified: true,
  ...change,
});
const balance = (creditMicros: number, heldMicros = 0): Balance => ({
  creditMicros,
  heldMicros,
  debtMicros: 0,
  creditLimitMicros: 0,
  availableMicros: creditMicros - heldMicros,
});
const reasonOf = (standing: ReturnType<typeof billingStanding>): string =>
  standing.ok ? 'ok' : standing.reason;

describe('billingStanding', () => {
  it('a paid period that ended refuses whatever the balance, naming the plan and the day it ended', () => {
    const ended = account({ plan: 'starter', planExpiresAt: NOW });
    const standing = billingStanding(config(false), ended, NOW, balance(5_000_000));
    assert.equal(reasonOf(standing), 'subscription_expired');
    assert.match(standing.ok ? '' : standing.message, /Starter plan ended on 2026-11-03T10:00:00.000Z/);
    assert.equal(reasonOf(billingStanding(config(false), ended, NOW)), 'subscription_expired');
    assert.equal(reasonOf(billingStanding(config(false), ended, NOW - 1, balance(1))), 'ok');
  });

  it('an unverified trial account is refused only when verification is required', () => {
    const unverified = account({ emailVerified: false });
    assert.equal(reasonOf(billingStanding(config(true), unverified, NOW)), 'email_unverified');
    assert.equal(reasonOf(billingStanding(config(false), unverified, NOW)), 'ok');
    const paid = account({ emailVerified: false, plan: 'pro', planExpiresAt: NOW + 1 });
    assert.equal(reasonOf(billingStanding(config(true), paid, NOW)), 'ok');
  });

  it('without a balance only the balance-free rules decide', () => {
    assert.equal(reasonOf(billingStanding(config(true), account(), NOW)), 'ok');
  });

  it('an empty trial is trial_expired; credit held by requests in flight is insufficient_balance', () => {
    assert.equal(reasonOf(billingStanding(config(false), account(), NOW, balance(0))), 'trial_expired');
    assert.equal(
      reasonOf(billingStanding(config(false), account(), NOW, balance(100, 100))),
      'insufficient_balance',
    );
    assert.equal(reasonOf(billingStanding(config(false), account(), NOW, balance(100, 99))), 'ok');
    const starter = account({ plan: 'starter', planExpiresAt: NOW + 1 });
    assert.equal(reasonOf(billingStanding(config(false), starter, NOW, balance(0))), 'insufficient_balance');
  });
});

describe('effectiveLimits', () => {
  it("the plan's limits, each replaced by the operator's override when one is set", () => {
    assert.deepEqual(effectiveLimits(DEFAULT_PLANS, account()), {
      requestsPerMinute: 10,
      tokensPerMinute: 50_000,
      dailyTokens: 500_000,
    });
    assert.deepEqual(
      effectiveLimits(DEFAULT_PLANS, account({ plan: 'pro', tpmLimit: 7, dailyTokenLimit: 0 })),
      {
        requestsPerMinute: 300,
        tokensPerMinute: 7,
        dailyTokens: 0,
      },
    );
  });

  it('an account on a plan the configuration no longer has gets the Free Trial limits', () => {
    const plans = new Map([...DEFAULT_PLANS].filter(([id]) => id !== 'starter'));
    assert.equal(effectiveLimits(plans, account({ plan: 'starter' })).requestsPerMinute, 10);
  });
});
