import { newId } from '../core/ids.ts';
import type { WebhooksRepo } from '../store/webhooks-repo.ts';

/**
 * Puts an event for the account's endpoint in the durable outbox, due at `now`; resolves to its id (the
 * `X-Service-Event-Id` it is delivered with). The one way an event is queued: pass a transaction's repository
 * to queue it with the change that caused it. Whoever calls it nudges the dispatcher after the commit.
 */
export async function queueEvent(
  webhooks: WebhooksRepo,
  event: { accountId: string; eventType: string; body: object; now: number; id?: string },
): Promise<string> {
  const id = event.id ?? newId('evt');
  await webhooks.enqueue({
    id,
    accountId: event.accountId,
    eventType: event.eventType,
    payload: JSON.stringify(event.body),
    status: 'pending',
    attempts: 0,
    nextAttemptAt: event.now,
    createdAt: event.now,
    finishedAt: null,
  });
  return id;
}
