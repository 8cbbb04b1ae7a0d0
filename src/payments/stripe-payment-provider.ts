import { createRequire } from 'node:module';
import type Stripe from 'stripe';
import type { PaymentProvider } from './payment-provider.ts';
import { microsToCents } from '../core/money.ts';

// Loaded only when Stripe is configured: the package is the largest Tollgate has (about 18 MB resident).
const load = (): typeof Stripe => createRequire(import.meta.url)('stripe') as typeof Stripe;

export interface StripeOptions {
  secretKey: string;
  /** Another API address (stripe-mock, tests); Stripe's own when unset. */
  apiBase?: string | undefined;
}

/** A Stripe client, pointed at another API address when one is given. */
export function createStripeClient(options: StripeOptions): Stripe {
  const StripeClient = load();
  if (!options.apiBase) return new StripeClient(options.secretKey, { maxNetworkRetries: 2 });
  const base = new URL(options.apiBase);
  return new StripeClient(options.secretKey, {
    host: base.hostname,
    port: base.port,
    protocol: base.protocol === 'http:' ? 'http' : 'https',
    maxNetworkRetries: 0,
  });
}

/** The length of a Stripe subscription's period: Tollgate's 30-day plan period, as a recurring price. */
export const STRIPE_PLAN_RECURRING = { interval: 'day', interval_count: 30 } as const;

/**
 * Stripe Checkout Sessions: the order id travels as client_reference_id and metadata, and comes back in the
 * webhook. A plan is a subscription (Checkout in subscription mode, renewing every 30 days): its metadata names
 * the account, so the subscription's invoices and changes find it; a top-up is a one-off payment.
 */
export function createStripePaymentProvider(stripe: Stripe): PaymentProvider {
  return {
    id: 'stripe',
    async createCheckout(order, account, description, baseUrl) {
      const plan = order.kind === 'plan';
      const session = await stripe.checkout.sessions.create({
        mode: plan ? 'subscription' : 'payment',
        client_reference_id: order.id,
        customer_email: account.email,
        metadata: { order_id: order.id },
        ...(plan
          ? {
              subscription_data: {
                metadata: { order_id: order.id, account_id: account.id, plan: order.plan ?? '' },
              },
            }
          : {}),
        line_items: [
          {
            quantity: 1,
            price_data: {
              currency: order.currency.toLowerCase(),
              unit_amount: microsToCents(order.amountMicros),
              product_data: { name: description },
              ...(plan ? { recurring: STRIPE_PLAN_RECURRING } : {}),
            },
          },
        ],
        success_url: `${baseUrl}/checkout/${order.id}/done`,
        cancel_url: `${baseUrl}/checkout/${order.id}/cancelled`,
      });
      if (!session.url) throw new Error('Stripe returned a session without a URL');
      return { checkoutUrl: session.url, providerRef: session.id };
    },
  };
}
