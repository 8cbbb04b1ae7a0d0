import type { AccountRecord, OrderRecord } from '../core/records.ts';

export interface CheckoutSession {
  /** Where the customer pays. */
  checkoutUrl: string;
  /** The provider's own id for the session (Stripe's `cs_…`), if it has one. */
  providerRef: string | null;
}

/** Takes payment for an order; completion arrives later (the test page's form, or Stripe's webhook). */
export interface PaymentProvider {
  readonly id: 'test' | 'stripe';
  /** `baseUrl` is where this Tollgate is reached (PUBLIC_URL, or in development the address it listens on). */
  createCheckout(
    order: OrderRecord,
    account: AccountRecord,
    description: string,
    baseUrl: string,
  ): Promise<CheckoutSession>;
}

/** The embedded default, like a processor's test mode: a page of Tollgate's own completes the order. */
export function createTestPaymentProvider(): PaymentProvider {
  return {
    id: 'test',
    async createCheckout(order, _account, _description, baseUrl) {
      return { checkoutUrl: `${baseUrl}/checkout/${order.id}`, providerRef: null };
    },
  };
}
