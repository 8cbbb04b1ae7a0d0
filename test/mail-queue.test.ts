import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Mail, Mailer } from '../src/accounts/mailer.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { until } from './helpers/until.ts';
import { createTestClock } from './helpers/clock.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

const isNotice = (mail: Mail): boolean => mail.subject.startsWith('Breaking change');
const noticesTo = (sent: Mail[]): Mailer => ({
  send: async (mail) => {
    if (isNotice(mail)) sent.push(mail);
  },
});

// A breaking-change notice queues one mail per verified account in the database; the sender survives restarts.
for (const backend of BACKENDS) {
  const skip = await backend.unavailable();
  describe(`the durable mail queue on ${backend.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    before(async () => {
      opened = await backend.open();
    });
    after(async () => {
      await opened?.cleanup();
    });

    it('a restart in the middle of sending loses no mail and sends none twice', async () => {
      const time = createTestClock();
      // First instance: the mail server takes two mails, then fails (queued mails wait for a retry).
      const sentFirst: Mail[] = [];
      const flaky: Mailer = {
        async send(mail) {
          if (!isNotice(mail)) return;
          if (sentFirst.length >= 2) throw new Error('421 service not available');
          sentFirst.push(mail);
        },
      };
      const first = await startTestServer({ backend: opened, clock: time.clock, extra: { mailer: flaky } });
      const verified: string[] = [];
      for (let i = 0; i < 7; i++) {
        const email = `reader${i}-${Date.now()}@example.com`;
        const { accountId } = await first.register(email);
        if (i !== 3) {
          await first.services.store.accounts.markVerified(accountId);
          verified.push(email);
        }
      }
      const posted = await first.call('POST', '/api/admin/announcements', {
        key: ADMIN_KEY,
        body: {
          title: 'v1 ends',
          body: 'Move to v2.',
          breaking: true,
          effective_at: new Date(time.now + 90 * DAY_MS).toISOString(),
        },
      });
      assert.equal(posted.status, 201);
      const counts = (): Promise<Record<string, number>> => first.services.store.mailQueue.counts();
      try {
        await until(async () => sentFirst.length === 2 && (await counts())['sent'] === 2, 'two sent');
        assert.deepEqual(await counts(), { pending: 4, sent: 2 });
      } finally {
        await first.close();
      }
      // Another instance over the same database, its mail server taking every mail.
      const restart = (sent: Mail[]): Promise<TestServer> =>
        startTestServer({
          backend: opened,
          ownConnection: true,
          clock: time.clock,
          extra: { mailer: noticesTo(sent) },
        });

      // The second, an hour later: it sends the rest, each once.
      time.advance(HOUR_MS);
      const sentSecond: Mail[] = [];
      const second = await restart(sentSecond);
      try {
        await until(
          async () => (await second.services.store.mailQueue.counts())['sent'] === 6,
          'every mail sent',
        );
      } finally {
        await second.close();
      }

      // A third start finds nothing left to send.
      time.advance(HOUR_MS);
      const sentThird: Mail[] = [];
      const third = await restart(sentThird);
      try {
        const job = third.services.operators.jobs().find((j) => j.name === 'mail-queue')!;
        assert.equal(await third.services.scheduler.runOnce(job), true);
      } finally {
        await third.close();
      }

      const recipients = [...sentFirst, ...sentSecond, ...sentThird].map((mail) => mail.to).sort();
      assert.deepEqual(recipients, [...verified].sort(), 'each verified account got exactly one mail');
      assert.equal(sentThird.length, 0);
      assert.ok(sentFirst[0]!.subject.startsWith('Breaking change to Tollgate on '));
      assert.ok(sentFirst[0]!.text.includes('Move to v2.'));
    });
  });
}
