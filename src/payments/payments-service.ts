import type Stripe from 'stripe';
import type { Logger } from 'pino';
import { applyPlan } from '../billing/apply-plan.ts';
import { grantCredit } from '../billing/grant-credit.ts';
import type { Config, PlanId } from '../core/config.ts';
import type { Bus } from '../shared/bus.ts';
import { GatewayError } from '../core/gateway-error.ts';
import { type Clock, newId } from '../core/ids.ts';
import type { AccountRecord, OrderRecord } from '../core/records.ts';
import type { Store } from '../store/store.ts';
import { queueEvent } from '../webhooks/queue-event.ts';
import { paymentEvent } from './payment-event.ts';
import type { PaymentProvider } from './payment-provider.ts';
import type { BillingCycle } from './billing-cycle.ts';
import { centsToMicros, formatUsd, microsToCents } from '../core/money.ts';
import { DAY_MS } from '../core/time.ts';

export const FAILURE_REASONS = [
  'card_declined',
  'insufficient_funds',
  'expired_card',
  'processing_error',
  'expired',
] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

const TOPUP_MIN_MICROS = 5_000_000;
const TOPUP_MAX_MICROS = 10_000_000_000;
const TOPUP_VALIDITY_MS = 365 * DAY_MS;

export type Outcome = { status: 'paid' } | { status: 'failed'; reason: FailureReason };

export interface PaymentsOptions {
  store: Store;
  config: Config;
  clock: Clock;
  bus: Bus;
  logger: Logger;
  provider: PaymentProvider;
  stripe: Stripe | undefined;
  /** Called after an event is queued, so delivery starts at once. */
  onEventQueued(): void;
  /** Subscriptions and invoices: a paid order starts or extends one and is invoiced. */
  cycle?: BillingCycle;
}

/** Orders: checkout, completion (applied at most once, with its event queued in the same transaction). */
export class PaymentsService {
  readonly #o: PaymentsOptions;

  constructor(options: PaymentsOptions) {
    this.#o = options;
    if (options.provider.id === 'test')
      options.logger.warn(
        { provider: 'test' },
        'THE TEST PAYMENT PROVIDER IS ON: any user can take any plan or credit without paying; set STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET for real payments (docs/security.md)',
      );
  }

  /** Creates a pending order for a plan or a top-up and a checkout for it. */
  async checkout(
    account: AccountRecord,
    request: { plan?: string; topupUsd?: number },
    baseUrl: string,
  ): Promise<OrderRecord & { checkoutUrl: string }> {
    const { store, config, clock, provider } = this.#o;
    let kind: OrderRecord['kind'];
    let plan: PlanId | null = null;
    let amountMicros: number;
    let description: string;
    if (request.plan !== undefined && request.topupUsd === undefined) {
      const chosen = config.plans.get(request.plan as PlanId);
      if (!chosen?.purchasable) {
        const buyable = [...config.plans.values()].filter((p) => p.purchasable).map((p) => p.id);
        throw new GatewayError(
          'invalid_request',
          `plan must be one of ${buyable.join(', ')} (enterprise is arranged with the operator)`,
        );
      }
      kind = 'plan';
      plan = chosen.id;
      amountMicros = chosen.monthlyPriceMicros;
      description = `Tollgate ${chosen.name} plan, 30 days`;
    } else if (request.topupUsd !== undefined && request.plan === undefined) {
      amountMicros = centsToMicros(Math.round(request.topupUsd * 100));
      if (amountMicros < TOPUP_MIN_MICROS || amountMicros > TOPUP_MAX_MICROS) {
        throw new GatewayError('invalid_request', 'topup_usd must be between 5 and 10000, in cents at most');
      }
      kind = 'topup';
      description = `Tollgate credit top-up, USD ${formatUsd(amountMicros, 2)}`;
    } else {
      throw new GatewayError('invalid_request', 'send either plan or topup_usd');
    }
    const order: OrderRecord = {
      id: newId('ord'),
      accountId: account.id,
      kind,
      plan,
      amountMicros,
      currency: 'USD',
      status: 'pending',
      reason: null,
      provider: provider.id,
      providerRef: null,
      createdAt: clock(),
      completedAt: null,
    };
    await store.payments.insertOrder(order);
    let session;
    try {
      session = await provider.createCheckout(order, account, description, baseUrl);
    } catch (error) {
      await store.payments.complete(order.id, 'failed', 'processing_error', clock());
      throw new GatewayError(
        'provider_error',
        'the payment provider could not start a checkout; retry later',
        { cause: error },
      );
    }
    if (session.providerRef) await store.payments.setProviderRef(order.id, session.providerRef);
    return { ...order, providerRef: session.providerRef, checkoutUrl: session.checkoutUrl };
  }

  /** The account's orders, newest first. */
  async orders(accountId: string): Promise<OrderRecord[]> {
    return this.#o.store.payments.ordersOf(accountId);
  }

  /** An order of the test provider, for its checkout page; 404 for any other. */
  async testCheckout(orderId: string): Promise<OrderRecord> {
    const order = await this.#o.store.payments.order(orderId);
    if (!order || order.provider !== 'test') throw new GatewayError('not_found', 'no such checkout');
    return order;
  }

  /**
   * Completes a test provider's order as its card form would (403 for a suspended account, 409 for an order
   * no longer pending); resolves to the order as it now stands.
   */
  async completeTestCheckout(orderId: string, outcome: Outcome): Promise<OrderRecord> {
    const { store } = this.#o;
    const order = await this.testCheckout(orderId);
    const account = await store.accounts.byId(order.accountId);
    if (!account) throw new GatewayError('not_found', `no account ${order.accountId}`);
    if (account.status === 'suspended') throw new GatewayError('forbidden', 'this account is suspended');
    if (!(await this.complete(order.id, outcome)))
      throw new GatewayError('conflict', `order ${order.id} is already ${order.status}`);
    return (await store.payments.order(order.id)) ?? order;
  }

  /**
   * Settles a pending order: a paid plan is applied (period, allowance, limits) or a top-up credited, and the
   * payment event queued, all in one transaction. An order that is no longer pending is left alone: false.
   * `dedupe` names a provider event that must be applied at most once (a replayed Stripe event).
   */
  async complete(
    orderId: string,
    outcome: Outcome,
    dedupe?: { provider: string; eventId: string; subscriptionRef?: string | undefined },
  ): Promise<boolean> {
    const { store, config, clock, bus } = this.#o;
    const now = clock();
    const applied = await store.transaction(async (tx) => {
      if (dedupe && !(await tx.payments.markEventProcessed(dedupe.provider, dedupe.eventId, now)))
        return undefined;
      const order = await tx.payments.order(orderId);
      if (!order) throw new GatewayError('not_found', `no order ${orderId}`);
      if (
        !(await tx.payments.complete(
          order.id,
          outcome.status,
          outcome.status === 'failed' ? outcome.reason : null,
          now,
        ))
      )
        return undefined;
      const account = await tx.accounts.byId(order.accountId);
      if (!account) throw new GatewayError('not_found', `no account ${order.accountId}`);
      let planAfter = account.plan;
      if (outcome.status === 'paid' && order.kind === 'plan' && order.plan) {
        const plan = config.plans.get(order.plan);
        if (plan) await applyPlan(tx, account.id, plan, now, order.id);
        planAfter = order.plan;
        if (plan && this.#o.cycle) {
          await this.#o.cycle.planPaid(tx, account, plan, order.provider, dedupe?.subscriptionRef);
          await this.#o.cycle.invoiceOrder(tx, account, order, [
            { description: `${plan.name} plan, 30 days`, amountMicros: order.amountMicros },
          ]);
        }
      } else if (outcome.status === 'paid') {
        await grantCredit(tx.ledger, {
          accountId: account.id,
          kind: 'topup',
          amountMicros: order.amountMicros,
          expiresAt: now + TOPUP_VALIDITY_MS,
          source: order.id,
          now,
        });
        await this.#o.cycle?.invoiceOrder(tx, account, order, [
          { description: 'Credit top-up', amountMicros: order.amountMicros },
        ]);
      }
      const payload = paymentEvent(order, account.email, planAfter, outcome, now);
      if (await tx.webhooks.endpoint(account.id)) {
        await queueEvent(tx.webhooks, {
          accountId: account.id,
          eventType: payload.event_type,
          body: payload,
          now,
        });
      }
      return account.id;
    });
    if (applied === undefined) return false;
    await bus
      .publish({ accountId: applied })
      .catch((error: unknown) => this.#o.logger.warn({ err: error }, 'invalidation not published'));
    this.#o.onEventQueued();
    return true;
  }

  /**
   * Applies a verified Stripe event: checkout completed and paid, async payment succeeded or failed, session
   * expired. Returns what happened (for the answer and the tests).
   */
  async handleStripeEvent(
    rawBody: string,
    signature: string | undefined,
    webhookSecret: string,
  ): Promise<'applied' | 'duplicate' | 'ignored' | 'refused'> {
    const { stripe } = this.#o;
    if (!stripe) throw new GatewayError('not_found', 'Stripe is not configured');
    let event: Stripe.Event;
    try {
      event = stripe.webhooks.constructEvent(rawBody, signature ?? '', webhookSecret);
    } catch (error) {
      throw new GatewayError('invalid_request', 'invalid Stripe signature', { cause: error });
    }
    const cycle = this.#o.cycle;
    if (cycle && (event.type === 'invoice.paid' || event.type === 'invoice.payment_failed')) {
      const invoice = event.data.object as StripeInvoiceFields;
      const parent = invoice.parent?.subscription_details;
      const ref = parent?.subscription ?? invoice.subscription;
      const accountId = (parent?.metadata ?? invoice.subscription_details?.metadata)?.['account_id'];
      // The first invoice is paid through its Checkout Session (checkout.session.completed); a change's
      // proration invoice is not a renewal.
      if (invoice.billing_reason !== 'subscription_cycle' || typeof ref !== 'string' || !accountId)
        return 'ignored';
      return cycle.stripeRenewal(accountId, {
        eventId: event.id,
        subscriptionRef: ref,
        invoiceId: invoice.id ?? event.id,
        paid: event.type === 'invoice.paid',
        amountCents: event.type === 'invoice.paid' ? (invoice.amount_paid ?? 0) : (invoice.amount_due ?? 0),
        currency: invoice.currency ?? '',
      });
    }
    if (
      cycle &&
      (event.type === 'customer.subscription.updated' || event.type === 'customer.subscription.deleted')
    ) {
      const subscription = event.data.object as Partial<Stripe.Subscription>;
      const accountId = subscription.metadata?.['account_id'];
      if (!accountId || typeof subscription.id !== 'string') return 'ignored';
      return cycle.stripeSubscriptionChanged(accountId, {
        eventId: event.id,
        subscriptionRef: subscription.id,
        deleted: event.type === 'customer.subscription.deleted',
        cancelAtPeriodEnd: subscription.cancel_at_period_end === true,
      });
    }
    const session = event.data.object as Partial<Stripe.Checkout.Session>;
    const orderId = session.metadata?.['order_id'] ?? session.client_reference_id ?? undefined;
    let outcome: Outcome | undefined;
    if (event.type === 'checkout.session.completed' && session.payment_status === 'paid')
      outcome = { status: 'paid' };
    else if (event.type === 'checkout.session.async_payment_succeeded') outcome = { status: 'paid' };
    else if (event.type === 'checkout.session.async_payment_failed')
      outcome = { status: 'failed', reason: 'processing_error' };
    else if (event.type === 'checkout.session.expired') outcome = { status: 'failed', reason: 'expired' };
    if (!outcome || !orderId) return 'ignored';
    const order = await this.#o.store.payments.order(orderId);
    if (!order) return 'ignored';
    const mismatch = stripeMismatch(order, session);
    if (mismatch) {
      // Signed by Stripe, but not a payment for this order: a cheap session pointed at a dear order.
      this.#o.logger.error(
        { orderId, eventId: event.id, eventType: event.type, mismatch },
        'Stripe event refused: it does not match the order',
      );
      return 'refused';
    }
    const subscriptionRef = typeof session.subscription === 'string' ? session.subscription : undefined;
    return (await this.complete(orderId, outcome, { provider: 'stripe', eventId: event.id, subscriptionRef }))
      ? 'applied'
      : 'duplicate';
  }
}

/**
 * The fields of a Stripe invoice event that Tollgate reads: the subscription is under
 * `parent.subscription_details` since API version 2025-03-31, and at the top level before.
 */
interface StripeInvoiceFields {
  id?: string;
  billing_reason?: string | null;
  amount_paid?: number;
  amount_due?: number;
  currency?: string;
  subscription?: string | null;
  subscription_details?: { metadata?: Record<string, string> | null } | null;
  parent?: {
    subscription_details?: {
      subscription?: string | null;
      metadata?: Record<string, string> | null;
    } | null;
  } | null;
}

/** What differs between a Stripe session and the order it names (provider, amount in cents, currency). */
function stripeMismatch(
  order: OrderRecord,
  session: Partial<Stripe.Checkout.Session>,
): Record<string, unknown> | undefined {
  const cents = microsToCents(order.amountMicros);
  const currency = order.currency.toLowerCase();
  if (order.provider !== 'stripe') return { provider: order.provider };
  if (session.amount_total !== cents) return { amount_total: session.amount_total ?? null, expected: cents };
  if (session.currency?.toLowerCase() !== currency)
    return { currency: session.currency ?? null, expected: currency };
  return undefined;
}
