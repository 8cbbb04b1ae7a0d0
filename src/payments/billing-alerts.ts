import type { Store } from '../store/store.ts';
import { queueEvent } from '../webhooks/queue-event.ts';

/** Alert event types an account's webhook endpoint may ask for, beside the spec's payment events. */
export const ALERT_EVENTS = [
  'balance.low',
  'key.limit_reached',
  'trial.expiring',
  'subscription.renewing',
  'subscription.payment_failed',
] as const;
export type AlertEvent = (typeof ALERT_EVENTS)[number];

export interface Alert {
  /** The crossing: the same id is alerted once (across instances and restarts). */
  id: string;
  accountId: string;
  kind: AlertEvent;
  subject: string;
  body: string;
  /** The event's fields besides `event_type` and `timestamp`. */
  fields: Record<string, unknown>;
  now: number;
  /** The account's billing time: the event's timestamp. */
  billingNow: number;
  /** False when the caller already mails about it. */
  mail?: boolean;
}

/**
 * Sends an alert once per crossing, in the caller's transaction: the crossing's row, the e-mail and, when the
 * account's endpoint asked for this type, the signed webhook event. Resolves to whether an event was queued
 * (the caller nudges the dispatcher after the commit).
 */
export async function raiseAlert(tx: Store, alert: Alert): Promise<boolean> {
  if (!(await tx.billing.recordAlert(alert.id, alert.accountId, alert.kind, alert.now))) return false;
  const account = await tx.accounts.byId(alert.accountId);
  if (!account) return false;
  if (alert.mail !== false)
    await tx.mailQueue.enqueue(
      { id: `alert:${alert.id}`, recipient: account.email, subject: alert.subject, body: alert.body },
      alert.now,
    );
  const settings = await tx.billing.alertSettings(alert.accountId);
  if (!settings.events.includes(alert.kind) || !(await tx.webhooks.endpoint(alert.accountId))) return false;
  await queueEvent(tx.webhooks, {
    accountId: alert.accountId,
    eventType: alert.kind,
    body: { event_type: alert.kind, ...alert.fields, timestamp: new Date(alert.billingNow).toISOString() },
    now: alert.now,
  });
  return true;
}
