import type { OrderRecord } from '../core/records.ts';
import { microsToUsd } from '../core/money.ts';

/** The body of a payment webhook, as the spec's Events table lists its fields. */
export type PaymentEvent =
  | {
      event_type: 'payment.success';
      order_id: string;
      plan: string;
      amount: number;
      currency: string;
      customer_email: string;
      timestamp: string;
    }
  | { event_type: 'payment.failed'; order_id: string; reason: string; timestamp: string };

/**
 * The event for an order that completed at `now`: success carries the plan the account has after it, the
 * amount in the currency's decimal units and the customer's e-mail; failure carries the reason code.
 */
export function paymentEvent(
  order: Pick<OrderRecord, 'id' | 'amountMicros' | 'currency'>,
  customerEmail: string,
  planAfter: string,
  outcome: { status: 'paid' } | { status: 'failed'; reason: string },
  now: number,
): PaymentEvent {
  const timestamp = new Date(now).toISOString();
  return outcome.status === 'paid'
    ? {
        event_type: 'payment.success',
        order_id: order.id,
        plan: planAfter,
        amount: microsToUsd(order.amountMicros),
        currency: order.currency,
        customer_email: customerEmail,
        timestamp,
      }
    : { event_type: 'payment.failed', order_id: order.id, reason: outcome.reason, timestamp };
}
