import type { AccountRecord, OrderRecord } from '../store/records.ts';

export interface CheckoutSession {
  /** Where the customer pays. */
  checkoutUrl: string;
  /** The provider's own id for the session (Stripe's `cs_…`), if it has one. */
  providerRef: string | null;
}

/** Takes payment for an order; completion arrives later (the test page's form, or Stripe's webhook). */
export interface PaymentProvider {
  readonly id: 'test' | 'stripe';
  createCheckout(order: OrderRecord, account: AccountRecord, description: string): Promise<CheckoutSession>;
}

/** The embedded default, like a processor's test mode: a page of Tollgate's own completes the order. */
export function createTestPaymentProvider(publicUrl: string): PaymentProvider {
  return {
    id: 'test',
    async createCheckout(order) {
      return { checkoutUrl: `${publicUrl}/checkout/${order.id}`, providerRef: null };
    },
  };
}
