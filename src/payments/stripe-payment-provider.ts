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

/** Stripe Checkout Sessions: the order id travels as client_reference_id and metadata, and comes back in the webhook. */
export function createStripePaymentProvider(stripe: Stripe): PaymentProvider {
  return {
    id: 'stripe',
    async createCheckout(order, account, description, baseUrl) {
      const session = await stripe.checkout.sessions.create({
        mode: 'payment',
        client_reference_id: order.id,
        customer_email: account.email,
        metadata: { order_id: order.id },
        line_items: [
          {
            quantity: 1,
            price_data: {
              currency: order.currency.toLowerCase(),
              unit_amount: microsToCents(order.amountMicros),
              product_data: { name: description },
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
