import type { Logger } from 'pino';
import type { Mailer } from '../accounts/mailer.ts';
import type { Job } from '../jobs/scheduler.ts';
import type { Clock } from '../core/ids.ts';
import type { Store } from '../store/store.ts';

const BATCH = 50;
/** Attempts before a mail is given up (status 'failed'): about a day of backoff. */
const MAX_ATTEMPTS = 12;
const LEASE_MS = 2 * 60_000;

/** 30 s, 1 min, 2 min … capped at 2 hours. */
const backoffMs = (attempts: number): number => Math.min(2 * 3_600_000, 30_000 * 2 ** attempts);

/**
 * Sends the durable mail queue through the mailer, one instance at a time (the job's lease): each mail is
 * claimed, sent, then marked sent. A stop waits for the round in flight, so a restart repeats none; a crash
 * between a send and its mark repeats that one mail after its claim runs out (at least once, never lost).
 * A failed send ends the round (the server is likely down for all) and is retried with backoff.
 */
export function createMailQueueJob(store: Store, mailer: Mailer, clock: Clock, logger: Logger): Job {
  return {
    name: 'mail-queue',
    everyMs: 5_000,
    leaseMs: LEASE_MS,
    async run() {
      for (;;) {
        const now = clock();
        const due = await store.mailQueue.claimDue(now, now + LEASE_MS, BATCH);
        for (const mail of due) {
          try {
            await mailer.send({ to: mail.recipient, subject: mail.subject, text: mail.body });
          } catch (error) {
            const attempts = mail.attempts + 1;
            const next = attempts >= MAX_ATTEMPTS ? null : clock() + backoffMs(attempts);
            await store.mailQueue.markFailed(mail.id, (error as Error).message, next);
            logger.warn({ err: error, mail: mail.id, attempts }, 'queued e-mail not sent; retried later');
            return;
          }
          await store.mailQueue.markSent(mail.id, clock());
        }
        if (due.length < BATCH) return;
      }
    },
  };
}
