import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { paymentEvent } from './payment-event.ts';

const ORDER = { id: 'ord_123', amountMicros: 29_990_000, currency: 'usd' };
const NOW = Date.parse('2026-11-03T10:20:30.456Z');

describe('paymentEvent (the webhook body, field by field)', () => {
  it('payment.success carries exactly the spec fields', () => {
    const event = paymentEvent(ORDER, 'ann@example.com', 'pro', { status: 'paid' }, NOW);
    assert.deepEqual(event, {
      event_type: 'payment.success',
      order_id: 'ord_123',
      plan: 'pro',
      amount: 29.99,
      currency: 'usd',
      customer_email: 'ann@example.com',
      timestamp: '2026-11-03T10:20:30.456Z',
    });
    assert.deepEqual(Object.keys(event), [
      'event_type',
      'order_id',
      'plan',
      'amount',
      'currency',
      'customer_email',
      'timestamp',
    ]);
  });

  it('the amount is decimal currency units, not micro-units', () => {
    const event = paymentEvent(
      { ...ORDER, amountMicros: 5_000_000 },
      'a@b.c',
      'free_trial',
      { status: 'paid' },
      NOW,
    );
    assert.equal(event.event_type === 'payment.success' && event.amount, 5);
    const cents = paymentEvent(
      { ...ORDER, amountMicros: 10_000 },
      'a@b.c',
      'free_trial',
      { status: 'paid' },
      NOW,
    );
    assert.equal(cents.event_type === 'payment.success' && cents.amount, 0.01);
  });

  it('payment.failed carries the order, the reason code and the time, nothing else', () => {
    const event = paymentEvent(
      ORDER,
      'ann@example.com',
      'pro',
      { status: 'failed', reason: 'card_declined' },
      NOW,
    );
    assert.deepEqual(event, {
      event_type: 'payment.failed',
      order_id: 'ord_123',
      reason: 'card_declined',
      timestamp: '2026-11-03T10:20:30.456Z',
    });
  });

  it('the timestamp is ISO 8601 in UTC', () => {
    const event = paymentEvent(ORDER, 'a@b.c', 'pro', { status: 'paid' }, 0);
    assert.equal(event.timestamp, '1970-01-01T00:00:00.000Z');
    assert.match(event.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
  });
});
