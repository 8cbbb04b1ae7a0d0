import type { Logger } from 'pino';
import type Stripe from 'stripe';
import type { Config, PlanConfig, PlanId } from '../core/config.ts';
import type { Job } from '../jobs/scheduler.ts';
import { paymentEvent } from '../payments/payment-event.ts';
import type { Bus } from '../shared/bus.ts';
import { GatewayError } from '../core/gateway-error.ts';
import { type Clock, newId } from '../core/ids.ts';
import { formatUsd, microsToCents, microsToUsd } from '../core/money.ts';
import { DAY_MS } from '../core/time.ts';
import type { InvoiceLine, InvoiceRecord, SubscriptionRecord } from '../store/billing-repo.ts';
import type { AccountRecord, OrderRecord } from '../core/records.ts';
import type { Store } from '../store/store.ts';
import { queueEvent } from '../webhooks/queue-event.ts';
import { PLAN_PERIOD_MS } from '../billing/apply-plan.ts';
import { grantCredit } from '../billing/grant-credit.ts';
import { raiseAlert } from './billing-alerts.ts';
import { periodStartMs } from '../accounts/key-controls.ts';

/** After a failed renewal the plan keeps serving this long while the card is retried (docs/decisions.md). */
export const GRACE_MS = 7 * DAY_MS;
/** The shares of a key's spending limit (percent) at which `key.limit_reached` is sent. */
export const KEY_LIMIT_STEPS = [80, 100] as const;
/** Renewal and trial alerts go out this long before the end. */
export const ALERT_AHEAD_MS = 3 * DAY_MS;
/** How often a failed renewal is retried within the grace period; the last try is at its end. */
export const RETRY_EVERY_MS = 2 * DAY_MS;

/** Overage with no cap: the allowance at list prices stands at USD 1,000,000 (integer µUSD stay exact). */
const UNCAPPED_MICROS = 1_000_000_000_000;

/**
 * What `listMicros` of overage (its requests' cost at the models' list prices) is charged on `plan`: its
 * per-million rate is the list price times the plan's multiplier, applied once to the period's sum with one
 * ceiling (in the operator's favour by under one µUSD).
 */
export function overageCharge(plan: PlanConfig, listMicros: number): number {
  return Math.ceil((listMicros * plan.overageBasisPoints) / 10_000);
}

/**
 * How much overage at list prices the plan lets an account accrue for a cap (as charged; null: the plan's
 * default): the largest amount whose charge stays within the cap. 0 when the plan has no overage.
 */
export function overageAllowance(plan: PlanConfig, capMicros: number | null): number {
  if (plan.overageBasisPoints === 0 || plan.monthlyPriceMicros === 0) return 0;
  const cap = capMicros ?? plan.defaultOverageCapMicros;
  if (cap === null) return UNCAPPED_MICROS;
  return Math.floor((cap * 10_000) / plan.overageBasisPoints);
}

export interface BillingCycleOptions {
  store: Store;
  config: Config;
  clock: Clock;
  bus: Bus;
  logger: Logger;
  /** The payment provider in use: the billing clock and the simulated renewal charge are the test provider's. */
  providerId: 'test' | 'stripe';
  /** With Stripe: cancel and resume are made on Stripe's subscription, which then renews or ends it. */
  stripe?: Stripe | undefined;
  onEventQueued(): void;
}

/** A renewal invoice of a Stripe subscription, paid or failed, from its verified event. */
export interface StripeRenewal {
  eventId: string;
  subscriptionRef: string;
  invoiceId: string;
  paid: boolean;
  amountCents: number;
  currency: string;
}

type StripeResult = 'applied' | 'duplicate' | 'ignored' | 'refused';

/**
 * The billing cycle: subscriptions renew at their period end (one instance charges each, by claiming the due
 * row), a failed renewal gets a grace period with retries and e-mail, then the plan ends; cancel at period
 * end, resume, upgrade now (unused part credited), downgrade at period end; invoices for every payment; and
 * the test billing clock that moves an account's time forward.
 */
export class BillingCycle {
  readonly #o: BillingCycleOptions;

  constructor(options: BillingCycleOptions) {
    this.#o = options;
  }

  /** The account's billing time: wall time plus its billing-clock offset (zero unless moved in tests). */
  async billingNow(accountId: string, store: Store = this.#o.store): Promise<number> {
    return this.#o.clock() + (await store.billing.clockOffset(accountId));
  }

  /** The job that charges due renewals and retries, on one instance at a time. */
  renewalJob(): Job {
    return {
      name: 'subscription-renewals',
      everyMs: 5_000,
      leaseMs: 60_000,
      run: async () => void (await this.renewDue()),
    };
  }

  /** The job that sends alerts (renewal and trial ending in 3 days, low balance), on one instance at a time. */
  alertsJob(): Job {
    return { name: 'billing-alerts', everyMs: 10_000, leaseMs: 60_000, run: () => this.alertPass() };
  }

  /** One pass of the alerts: each fires once per crossing (its row), then re-arms where a crossing can repeat. */
  async alertPass(): Promise<void> {
    const { store, clock, config } = this.#o;
    const now = clock();
    let queued = false;
    const soon = await store.billing.endingSoon(now, now + ALERT_AHEAD_MS);
    for (const sub of soon.renewing) {
      const offset = await store.billing.clockOffset(sub.accountId);
      const plan = config.plans.get(sub.nextPlan ?? sub.plan);
      const at = new Date(sub.periodEnd + offset).toISOString();
      queued =
        (await store.transaction((tx) =>
          raiseAlert(tx, {
            id: `subscription.renewing:${sub.accountId}:${sub.periodEnd + offset}`,
            accountId: sub.accountId,
            kind: 'subscription.renewing',
            subject: `Your Tollgate ${plan?.name ?? sub.plan} plan renews on ${at.slice(0, 10)}`,
            body: `Your ${plan?.name ?? sub.plan} plan renews on ${at.slice(0, 10)} for USD ${formatUsd(plan?.monthlyPriceMicros ?? 0, 2)} plus this period's overage. Cancel it in the dashboard's Billing page if you do not want it to renew.`,
            fields: {
              plan: plan?.id ?? sub.plan,
              renews_at: at,
              amount: microsToUsd(plan?.monthlyPriceMicros ?? 0),
            },
            now,
            billingNow: now + offset,
          }),
        )) || queued;
    }
    for (const trial of soon.trials) {
      const offset = await store.billing.clockOffset(trial.accountId);
      const at = new Date(trial.expiresAt + offset).toISOString();
      queued =
        (await store.transaction((tx) =>
          raiseAlert(tx, {
            id: `trial.expiring:${trial.id}`,
            accountId: trial.accountId,
            kind: 'trial.expiring',
            subject: `Your Tollgate trial credit expires on ${at.slice(0, 10)}`,
            body: `Your free trial credit expires on ${at.slice(0, 10)}. Buy a plan or top up in the dashboard's Billing page to keep your keys working.`,
            fields: { expires_at: at },
            now,
            billingNow: now + offset,
          }),
        )) || queued;
    }
    for (const watch of await store.billing.lowBalanceWatches()) {
      const balance = await store.ledger.balance(watch.accountId, now);
      // Prepaid credit left (allowance and top-ups), not the overage the account may still run up.
      const left = balance.creditMicros - balance.heldMicros;
      const id = `balance.low:${watch.accountId}`;
      if (left >= watch.thresholdMicros) {
        await store.billing.clearAlert(id);
        continue;
      }
      const offset = await store.billing.clockOffset(watch.accountId);
      queued =
        (await store.transaction((tx) =>
          raiseAlert(tx, {
            id,
            accountId: watch.accountId,
            kind: 'balance.low',
            subject: `Your Tollgate balance is below USD ${formatUsd(watch.thresholdMicros, 2)}`,
            body: `Your balance is USD ${formatUsd(Math.max(0, left), 2)}, below the USD ${formatUsd(watch.thresholdMicros, 2)} you set. Top up in the dashboard's Billing page.`,
            fields: {
              balance: microsToUsd(left),
              threshold: microsToUsd(watch.thresholdMicros),
            },
            now,
            billingNow: now + offset,
          }),
        )) || queued;
    }
    queued = (await this.#keyLimitAlerts(now)) || queued;
    if (queued) this.#o.onEventQueued();
  }

  /**
   * `key.limit_reached` at 80% and 100% of each key's spending limit, once per crossing in each limit period
   * (the period's first day is in the crossing's id); a crossing that is undone (the limit raised) re-arms.
   */
  async #keyLimitAlerts(now: number): Promise<boolean> {
    const { store } = this.#o;
    let queued = false;
    for (const key of await store.billing.keyLimitWatches()) {
      const start = periodStartMs(key.period, now);
      const fromDay = key.period === 'never' ? '0000-00-00' : new Date(start).toISOString().slice(0, 10);
      const spent = await store.billing.keySpentSince(key.keyId, fromDay);
      for (const percent of KEY_LIMIT_STEPS) {
        const id = `key.limit_reached:${key.keyId}:${percent}:${fromDay}`;
        // Integer µUSD: spent / limit ≥ percent / 100 without a division.
        if (spent * 100 < key.limitMicros * percent) {
          await store.billing.clearAlert(id);
          continue;
        }
        const offset = await store.billing.clockOffset(key.accountId);
        queued =
          (await store.transaction((tx) =>
            raiseAlert(tx, {
              id,
              accountId: key.accountId,
              kind: 'key.limit_reached',
              subject: `Your Tollgate key "${key.name}" has used ${percent}% of its spending limit`,
              body:
                percent >= 100
                  ? `Your key "${key.name}" has spent USD ${formatUsd(spent, 2)} of its USD ${formatUsd(key.limitMicros, 2)} limit${key.period === 'never' ? '' : ` (${key.period})`}: its requests now get 402 until the limit is raised${key.period === 'never' ? '' : ' or the period starts over'}.`
                  : `Your key "${key.name}" has spent USD ${formatUsd(spent, 2)} of its USD ${formatUsd(key.limitMicros, 2)} limit${key.period === 'never' ? '' : ` (${key.period})`}. Raise the limit in the dashboard's Keys page if it needs more.`,
              fields: {
                key_id: key.keyId,
                key_name: key.name,
                percent,
                spent: microsToUsd(spent),
                limit: microsToUsd(key.limitMicros),
                period: key.period,
              },
              now,
              billingNow: now + offset,
            }),
          )) || queued;
      }
    }
    return queued;
  }

  /** Charges every due renewal or retry; resolves to how many were handled. */
  async renewDue(): Promise<number> {
    let handled = 0;
    for (;;) {
      const due = await this.#o.store.billing.dueAccounts(this.#o.clock(), 50);
      let progressed = 0;
      for (const accountId of due) if (await this.renewOne(accountId)) progressed++;
      handled += progressed;
      if (due.length < 50 || progressed === 0) return handled;
    }
  }

  /**
   * Moves the account's billing time forward by whole days (test payments only), then runs what fell due.
   * Renewals due on the way run one period at a time, so moving 90 days renews three times.
   */
  async advance(accountId: string, days: number): Promise<{ billingNow: number }> {
    const { store, providerId } = this.#o;
    if (providerId !== 'test')
      throw new GatewayError('conflict', 'the billing clock moves only with the test payment provider');
    if (!(await store.accounts.byId(accountId)))
      throw new GatewayError('not_found', `no account ${accountId}`);
    for (let day = 0; day < days; day++) {
      await store.transaction((tx) => tx.billing.advanceClock(accountId, DAY_MS));
      // A renewal charged on the way may schedule a retry within the same day: run until nothing is due.
      while (await this.renewOne(accountId));
      await this.alertPass();
    }
    await this.#invalidate(accountId);
    return { billingNow: await this.billingNow(accountId) };
  }

  /** Records a paid plan order's subscription (a new period from now) in the order's transaction. */
  async planPaid(
    tx: Store,
    account: AccountRecord,
    plan: PlanConfig,
    provider: string,
    providerRef?: string,
  ): Promise<void> {
    const after = await tx.accounts.byId(account.id);
    const periodEnd = after?.planExpiresAt;
    if (periodEnd === null || periodEnd === undefined) return;
    const now = this.#o.clock();
    const existing = await tx.billing.subscription(account.id, true);
    await tx.billing.putSubscription({
      accountId: account.id,
      plan: plan.id,
      status: 'active',
      provider,
      providerRef: providerRef ?? existing?.providerRef ?? null,
      periodStart: Math.min(now, periodEnd - PLAN_PERIOD_MS),
      periodEnd,
      cancelAtPeriodEnd: false,
      nextPlan: null,
      nextAttemptAt: provider === 'test' ? periodEnd : null,
      failedAttempts: 0,
      graceUntil: null,
      testCardDeclines: existing?.testCardDeclines ?? false,
      overageCapMicros: existing?.overageCapMicros ?? null,
      overageOwedMicros: existing?.overageOwedMicros ?? 0,
      updatedAt: now,
    });
    // Stripe charges only the plan's price on its invoices, so a Stripe subscription stops at its quota.
    await tx.billing.setOverageAllowance(
      account.id,
      provider === 'stripe' ? 0 : overageAllowance(plan, existing?.overageCapMicros ?? null),
    );
  }

  /** Issues the invoice of a paid order, in its transaction. */
  async invoiceOrder(
    tx: Store,
    account: AccountRecord,
    order: OrderRecord,
    lines: InvoiceLine[],
  ): Promise<InvoiceRecord> {
    const details = await tx.billing.details(account.id);
    return tx.billing.issueInvoice({
      id: newId('inv'),
      accountId: account.id,
      orderId: order.id,
      issuedAt: await this.billingNow(account.id, tx),
      currency: order.currency,
      totalMicros: lines.reduce((sum, line) => sum + line.amountMicros, 0),
      lines,
      buyer: { email: account.email, ...details },
    });
  }

  /**
   * One due charge of the account, if it is due and this caller claims it: the renewal (or its retry), or the
   * end of a cancelled or expired subscription. False when there was nothing to do.
   */
  async renewOne(accountId: string): Promise<boolean> {
    return (await this.#renew(accountId)) === 'applied';
  }

  /**
   * A Stripe subscription's renewal invoice, paid or failed: the same renewal as the test provider's, with
   * Stripe's outcome in place of the test card's. Stripe retries a failed invoice itself (its own schedule), so
   * no retry is scheduled here; the grace period still ends the plan if no paid invoice comes.
   */
  async stripeRenewal(accountId: string, renewal: StripeRenewal): Promise<StripeResult> {
    return this.#renew(accountId, renewal);
  }

  /**
   * A Stripe subscription changed: `cancel_at_period_end` is mirrored; a deleted subscription ends the plan
   * now (Stripe deletes it at the period end of a cancelled one, or when its retries are exhausted).
   */
  async stripeSubscriptionChanged(
    accountId: string,
    change: { eventId: string; subscriptionRef: string; deleted: boolean; cancelAtPeriodEnd: boolean },
  ): Promise<StripeResult> {
    const now = this.#o.clock();
    const result = await this.#o.store.transaction(async (tx): Promise<StripeResult> => {
      if (!(await tx.payments.markEventProcessed('stripe', change.eventId, now))) return 'duplicate';
      const sub = await tx.billing.subscription(accountId, true);
      if (!sub || sub.provider !== 'stripe' || sub.providerRef !== change.subscriptionRef) return 'ignored';
      if (!change.deleted) {
        if (sub.status !== 'active' && sub.status !== 'past_due') return 'ignored';
        await tx.billing.putSubscription({
          ...sub,
          cancelAtPeriodEnd: change.cancelAtPeriodEnd,
          updatedAt: now,
        });
        return 'applied';
      }
      if (sub.status === 'canceled' || sub.status === 'expired') return 'duplicate';
      await tx.billing.setOverageAllowance(accountId, 0);
      await tx.billing.endPlanGrants(accountId, now);
      await tx.accounts.setPlan(accountId, sub.plan, now);
      await tx.billing.putSubscription({
        ...sub,
        status: sub.failedAttempts > 0 ? 'expired' : 'canceled',
        nextAttemptAt: null,
        graceUntil: null,
        updatedAt: now,
      });
      return 'applied';
    });
    if (result === 'applied') await this.#invalidate(accountId);
    return result;
  }

  async #renew(accountId: string, stripe?: StripeRenewal): Promise<StripeResult> {
    const { store, config, clock } = this.#o;
    const now = clock();
    let queued = false;
    const done = await store.transaction(async (tx): Promise<StripeResult> => {
      if (stripe && !(await tx.payments.markEventProcessed('stripe', stripe.eventId, now)))
        return 'duplicate';
      const sub = await tx.billing.subscription(accountId, true);
      if (!sub) return 'ignored';
      if (stripe) {
        if (sub.provider !== 'stripe' || sub.providerRef !== stripe.subscriptionRef) return 'ignored';
        if (sub.status !== 'active' && sub.status !== 'past_due') return 'ignored';
        // One renewal per paid invoice, whichever of its events (or a replay under a new id) comes.
        if (stripe.paid && !(await tx.payments.markEventProcessed('stripe-invoice', stripe.invoiceId, now)))
          return 'duplicate';
      } else {
        if (sub.nextAttemptAt === null || sub.nextAttemptAt > now) return 'ignored';
        if (!(await tx.billing.claimDue(accountId, sub.nextAttemptAt))) return 'ignored';
      }
      const account = await tx.accounts.byId(accountId);
      if (!account) return 'ignored';
      const next = config.plans.get(sub.nextPlan ?? sub.plan);
      // Stripe's invoice is the word on whether the subscription renews.
      const renewing =
        (stripe !== undefined || !sub.cancelAtPeriodEnd) && next !== undefined && next.monthlyPriceMicros > 0;
      if (
        stripe?.paid &&
        (stripe.currency.toLowerCase() !== 'usd' ||
          stripe.amountCents < microsToCents(next?.monthlyPriceMicros ?? 0))
      ) {
        this.#o.logger.error(
          { accountId, eventId: stripe.eventId, amountCents: stripe.amountCents, currency: stripe.currency },
          'Stripe invoice refused: it does not pay the plan',
        );
        return 'refused';
      }
      // The period's overage is charged with its end, at the rate of the plan it was accrued on.
      const accrued = await tx.billing.accruedOverage(accountId);
      const overageList = accrued + sub.overageOwedMicros;
      const overagePlan = config.plans.get(sub.plan);
      const overageMicros = overagePlan ? overageCharge(overagePlan, overageList) : 0;
      if (!renewing && overageMicros === 0) {
        await tx.billing.setOverageAllowance(accountId, 0);
        await tx.billing.putSubscription({ ...sub, status: 'canceled', nextAttemptAt: null, updatedAt: now });
        return 'applied';
      }
      const plan = renewing ? next : (overagePlan ?? next!);
      const billingNow = await this.billingNow(accountId, tx);
      const offset = billingNow - now;
      const periodStart = sub.periodEnd;
      const periodEnd = sub.periodEnd + PLAN_PERIOD_MS;
      const lines: InvoiceLine[] = [];
      if (renewing)
        lines.push({
          description: `${plan.name} plan, ${day(periodStart + offset)} to ${day(periodEnd + offset)}`,
          amountMicros: plan.monthlyPriceMicros,
        });
      if (overageMicros > 0)
        lines.push({
          description: `Overage: USD ${formatUsd(overageList, 6)} at list prices × ${overagePlan!.overageBasisPoints / 10_000} (${overagePlan!.name})`,
          amountMicros: overageMicros,
        });
      const order: OrderRecord = {
        id: newId('ord'),
        accountId,
        kind: 'plan',
        plan: plan.id,
        amountMicros: lines.reduce((sum, line) => sum + line.amountMicros, 0),
        currency: 'USD',
        status: 'pending',
        reason: null,
        provider: sub.provider,
        providerRef: null,
        createdAt: now,
        completedAt: null,
      };
      await tx.payments.insertOrder(order);
      const declined = stripe ? !stripe.paid : sub.testCardDeclines;
      await tx.payments.complete(
        order.id,
        declined ? 'failed' : 'paid',
        declined ? 'card_declined' : null,
        now,
      );
      await tx.billing.takeOverage(accountId, accrued);
      if (!declined) {
        await this.invoiceOrder(tx, account, order, lines);
        if (renewing) {
          // An allowance kept through a grace period ends when the new period's is granted.
          await tx.billing.endPlanGrants(accountId, now);
          if (plan.monthlyAllowanceMicros > 0)
            await grantCredit(tx.ledger, {
              accountId,
              kind: 'plan',
              amountMicros: plan.monthlyAllowanceMicros,
              expiresAt: periodEnd,
              source: order.id,
              now,
            });
          await tx.accounts.setPlan(accountId, plan.id, periodEnd);
        }
        await tx.billing.setOverageAllowance(
          accountId,
          renewing && !stripe ? overageAllowance(plan, sub.overageCapMicros) : 0,
        );
        await tx.billing.putSubscription({
          ...sub,
          plan: plan.id,
          status: renewing ? 'active' : 'canceled',
          periodStart: renewing ? periodStart : sub.periodStart,
          periodEnd: renewing ? periodEnd : sub.periodEnd,
          nextPlan: null,
          nextAttemptAt: renewing && !stripe ? periodEnd : null,
          failedAttempts: 0,
          graceUntil: null,
          overageOwedMicros: 0,
          updatedAt: now,
        });
      } else {
        // A failed charge suspends overage (what was accrued is owed apart), never the prepaid credit.
        await tx.billing.setOverageAllowance(accountId, 0);
        const graceUntil = sub.graceUntil ?? sub.periodEnd + GRACE_MS;
        const final = !renewing || now >= graceUntil;
        if (renewing) {
          // Through the grace period the plan serves with what is left of its last allowance.
          if (sub.graceUntil === null)
            await tx.billing.extendPlanGrants(accountId, sub.periodEnd, graceUntil);
          await tx.accounts.setPlan(accountId, sub.plan, graceUntil);
        }
        await tx.billing.putSubscription({
          ...sub,
          status: !renewing ? 'canceled' : final ? 'expired' : 'past_due',
          failedAttempts: sub.failedAttempts + 1,
          graceUntil: renewing ? graceUntil : null,
          nextAttemptAt: final || stripe ? null : Math.min(now + RETRY_EVERY_MS, graceUntil),
          overageOwedMicros: overageList,
          updatedAt: now,
        });
        await tx.mailQueue.enqueue(
          {
            id: `renewal-failed:${order.id}`,
            recipient: account.email,
            subject:
              renewing && final
                ? `Your Tollgate ${plan.name} subscription has expired`
                : `Your Tollgate ${plan.name} renewal failed`,
            body:
              renewing && final
                ? `We could not charge USD ${formatUsd(order.amountMicros, 2)} for your ${plan.name} plan, and the grace period has ended: your subscription expired and API requests now get 402. Buy a plan in the dashboard to continue.`
                : `We could not charge USD ${formatUsd(order.amountMicros, 2)} for your ${plan.name} plan (card declined). Overage is suspended; prepaid credit still serves.${renewing ? ` Your plan keeps working until ${day(graceUntil + offset)} while we retry; update your card or buy the plan again in the dashboard before then.` : ''}`,
          },
          now,
        );
      }
      const outcome = declined
        ? ({ status: 'failed', reason: 'card_declined' } as const)
        : ({ status: 'paid' } as const);
      if (
        declined &&
        (await raiseAlert(tx, {
          id: `subscription.payment_failed:${order.id}`,
          accountId,
          kind: 'subscription.payment_failed',
          subject: '',
          body: '',
          fields: {
            order_id: order.id,
            plan: plan.id,
            amount: microsToUsd(order.amountMicros),
            reason: 'card_declined',
          },
          now,
          billingNow,
          mail: false,
        }))
      )
        queued = true;
      if (await tx.webhooks.endpoint(accountId)) {
        const payload = paymentEvent(order, account.email, plan.id, outcome, billingNow);
        await queueEvent(tx.webhooks, { accountId, eventType: payload.event_type, body: payload, now });
        queued = true;
      }
      return 'applied';
    });
    if (done === 'applied') await this.#invalidate(accountId);
    if (queued) this.#o.onEventQueued();
    return done;
  }

  /** Sets the account's overage cap (µUSD as charged; null: the plan's default) and applies it at once. */
  async setOverageCap(accountId: string, capMicros: number | null): Promise<SubscriptionRecord> {
    const { config } = this.#o;
    const changed = await this.#change(
      accountId,
      (sub) => ({ ...sub, overageCapMicros: capMicros }),
      async (tx, sub) => {
        const plan = config.plans.get(sub.plan);
        if (plan && (sub.status === 'active' || sub.status === 'past_due') && sub.failedAttempts === 0)
          await tx.billing.setOverageAllowance(accountId, overageAllowance(plan, capMicros));
      },
    );
    await this.#invalidate(accountId);
    return changed;
  }

  /** The account's subscription, if it ever had one. */
  async subscription(accountId: string): Promise<SubscriptionRecord | undefined> {
    return this.#o.store.billing.subscription(accountId);
  }

  /** Cancels at the period end: the plan serves until then and is not charged again. */
  async cancel(accountId: string): Promise<SubscriptionRecord> {
    await this.#stripeCancelAtPeriodEnd(accountId, true);
    return this.#change(accountId, (sub) => {
      if (sub.status !== 'active' && sub.status !== 'past_due')
        throw new GatewayError('conflict', `the subscription is ${sub.status}`);
      return { ...sub, cancelAtPeriodEnd: true, nextPlan: null };
    });
  }

  /** Takes back a cancellation made for the period end. */
  async resume(accountId: string): Promise<SubscriptionRecord> {
    await this.#stripeCancelAtPeriodEnd(accountId, false);
    return this.#change(accountId, (sub) => {
      if (sub.status !== 'active' && sub.status !== 'past_due')
        throw new GatewayError(
          'conflict',
          `the subscription is ${sub.status}; buy a plan to start a new one`,
        );
      return { ...sub, cancelAtPeriodEnd: false };
    });
  }

  /**
   * Changes plan: a cheaper plan from the period end; a dearer one at once, charged its price less the unused
   * part of the current period's price, with a new period from now (the old allowance ends now).
   */
  async changePlan(accountId: string, planId: string): Promise<SubscriptionRecord> {
    const { config, store, clock } = this.#o;
    const target = config.plans.get(planId as PlanId);
    if (!target?.purchasable)
      throw new GatewayError('invalid_request', `plan ${planId} cannot be subscribed to`);
    const current = await store.billing.subscription(accountId);
    if (!current || (current.status !== 'active' && current.status !== 'past_due'))
      throw new GatewayError('conflict', 'no active subscription; buy a plan first');
    if (current.provider === 'stripe')
      throw new GatewayError(
        'conflict',
        'a Stripe subscription changes plan by cancelling it and subscribing to the other plan',
      );
    const currentPlan = config.plans.get(current.plan);
    if (target.id === current.plan)
      return this.#change(accountId, (sub) => ({ ...sub, nextPlan: null, cancelAtPeriodEnd: false }));
    if (target.monthlyPriceMicros <= (currentPlan?.monthlyPriceMicros ?? 0))
      return this.#change(accountId, (sub) => ({ ...sub, nextPlan: target.id, cancelAtPeriodEnd: false }));
    let queued = false;
    const now = clock();
    const sub = await store.transaction(async (tx) => {
      const sub = await tx.billing.subscription(accountId, true);
      const account = await tx.accounts.byId(accountId);
      if (!sub || !account) throw new GatewayError('not_found', 'no subscription');
      const length = sub.periodEnd - sub.periodStart;
      const unused =
        length > 0 && sub.periodEnd > now
          ? Math.floor(((currentPlan?.monthlyPriceMicros ?? 0) * (sub.periodEnd - now)) / length)
          : 0;
      // The overage accrued so far is charged now, at the rate of the plan it was accrued on.
      const accrued = await tx.billing.accruedOverage(accountId);
      const overageList = accrued + sub.overageOwedMicros;
      const overageMicros = currentPlan ? overageCharge(currentPlan, overageList) : 0;
      const amount = Math.max(0, target.monthlyPriceMicros - unused) + overageMicros;
      if (sub.provider === 'test' && sub.testCardDeclines)
        throw new GatewayError('payment_required', 'the card on file was declined; the plan is unchanged');
      const order: OrderRecord = {
        id: newId('ord'),
        accountId,
        kind: 'plan',
        plan: target.id,
        amountMicros: amount,
        currency: 'USD',
        status: 'pending',
        reason: null,
        provider: sub.provider,
        providerRef: null,
        createdAt: now,
        completedAt: null,
      };
      await tx.payments.insertOrder(order);
      await tx.payments.complete(order.id, 'paid', null, now);
      await tx.billing.endPlanGrants(accountId, now);
      const periodEnd = now + PLAN_PERIOD_MS;
      if (target.monthlyAllowanceMicros > 0)
        await grantCredit(tx.ledger, {
          accountId,
          kind: 'plan',
          amountMicros: target.monthlyAllowanceMicros,
          expiresAt: periodEnd,
          source: order.id,
          now,
        });
      await tx.accounts.setPlan(accountId, target.id, periodEnd);
      const changed: SubscriptionRecord = {
        ...sub,
        plan: target.id,
        status: 'active',
        periodStart: now,
        periodEnd,
        cancelAtPeriodEnd: false,
        nextPlan: null,
        nextAttemptAt: sub.provider === 'test' ? periodEnd : null,
        failedAttempts: 0,
        graceUntil: null,
        overageOwedMicros: 0,
        updatedAt: now,
      };
      await tx.billing.putSubscription(changed);
      await tx.billing.takeOverage(accountId, accrued);
      await tx.billing.setOverageAllowance(accountId, overageAllowance(target, sub.overageCapMicros));
      const billingNow = await this.billingNow(accountId, tx);
      const offset = billingNow - now;
      await this.invoiceOrder(tx, account, order, [
        {
          description: `${target.name} plan, ${day(billingNow)} to ${day(periodEnd + offset)}`,
          amountMicros: target.monthlyPriceMicros,
        },
        ...(unused > 0
          ? [
              {
                description: `Unused time on the ${currentPlan?.name ?? sub.plan} plan`,
                amountMicros: -unused,
              },
            ]
          : []),
        ...(overageMicros > 0
          ? [
              {
                description: `Overage: USD ${formatUsd(overageList, 6)} at list prices × ${(currentPlan?.overageBasisPoints ?? 0) / 10_000}`,
                amountMicros: overageMicros,
              },
            ]
          : []),
      ]);
      if (await tx.webhooks.endpoint(accountId)) {
        const payload = paymentEvent(order, account.email, target.id, { status: 'paid' }, billingNow);
        await queueEvent(tx.webhooks, { accountId, eventType: payload.event_type, body: payload, now });
        queued = true;
      }
      return changed;
    });
    await this.#invalidate(accountId);
    if (queued) this.#o.onEventQueued();
    return sub;
  }

  /** Test provider only: makes the saved test card decline (or pay again) at the next charge. */
  async setTestCard(accountId: string, declines: boolean): Promise<SubscriptionRecord> {
    if (this.#o.providerId !== 'test')
      throw new GatewayError('not_found', 'the test payment provider is off');
    return this.#change(accountId, (sub) => ({ ...sub, testCardDeclines: declines }));
  }

  /** Sets Stripe's own subscription to end (or not) at its period end, before the local record follows. */
  async #stripeCancelAtPeriodEnd(accountId: string, cancel: boolean): Promise<void> {
    const sub = await this.#o.store.billing.subscription(accountId);
    if (sub?.provider !== 'stripe' || !sub.providerRef) return;
    if (sub.status !== 'active' && sub.status !== 'past_due') return;
    const { stripe } = this.#o;
    if (!stripe) throw new GatewayError('conflict', 'Stripe is not configured on this instance');
    try {
      await stripe.subscriptions.update(sub.providerRef, { cancel_at_period_end: cancel });
    } catch (error) {
      throw new GatewayError('provider_error', 'Stripe did not take the change; retry later', {
        cause: error,
      });
    }
  }

  async #change(
    accountId: string,
    edit: (sub: SubscriptionRecord) => SubscriptionRecord,
    then?: (tx: Store, changed: SubscriptionRecord) => Promise<void>,
  ): Promise<SubscriptionRecord> {
    const now = this.#o.clock();
    return this.#o.store.transaction(async (tx) => {
      const sub = await tx.billing.subscription(accountId, true);
      if (!sub) throw new GatewayError('not_found', 'no subscription; buy a plan first');
      const changed = { ...edit(sub), updatedAt: now };
      await tx.billing.putSubscription(changed);
      await then?.(tx, changed);
      return changed;
    });
  }

  async #invalidate(accountId: string): Promise<void> {
    await this.#o.bus
      .publish({ accountId })
      .catch((error: unknown) => this.#o.logger.warn({ err: error }, 'invalidation not published'));
  }
}

const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
