import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';
import { until } from './helpers/until.ts';

const FAST = { webhookRetryDelaysMs: [150, 150, 150], webhookTimeoutMs: 400, webhookPollMs: 25 };

/**
 * `key.limit_reached`: at 80% and at 100% of a key's spending limit, an e-mail and (for an endpoint that asked
 * for the type) a signed event, once per crossing however many alert passes run; raising the limit re-arms.
 */
for (const backend of BACKENDS) {
  const skip = await backend.unavailable();
  describe(`key.limit_reached on ${backend.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let a: TestServer;
    let b: TestServer;
    let receiver: Receiver;

    before(async () => {
      opened = await backend.open();
      receiver = await startReceiver();
      a = await startTestServer({ backend: opened, extra: FAST });
      // A second instance on the same database (PostgreSQL), or a second pass source (SQLite).
      b = backend.name === 'postgres' ? await startTestServer({ backend: opened, extra: FAST }) : a;
    });
    after(async () => {
      if (b !== a) await b?.close();
      await a?.close();
      await receiver?.close();
      await opened?.cleanup();
    });

    it('80% and 100% of a key limit alert once each, by e-mail and signed event; raising the limit re-arms', async () => {
      const email = `keylimit-${process.pid}-${Date.now()}@example.com`;
      const { key } = await a.register(email);
      assert.equal(
        (await a.call('PUT', '/api/webhooks/endpoint', { key, body: { url: receiver.url } })).status,
        200,
      );
      const settings = await a.call('PUT', '/api/billing/alerts', {
        key,
        body: { low_balance_usd: null, webhook_events: ['key.limit_reached'] },
      });
      assert.equal(settings.status, 200, JSON.stringify(settings.body));

      const created = await a.call('POST', '/api/keys', { key, body: { name: 'ci' } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const limited = created.body.key as string;
      const keyId = created.body.id as string;
      const answer = await a.call('POST', '/v1/chat/completions', {
        key: limited,
        // A long prompt, so the spend is thousands of µUSD and the shares below are exact enough.
        body: {
          model: 'model-a',
          max_tokens: 50,
          messages: [{ role: 'user', content: 'hello '.repeat(4000) }],
        },
      });
      assert.equal(answer.status, 200);
      const costMicros = Math.round(Number(answer.headers.get('x-tollgate-cost-usd')) * 1e6);
      assert.ok(costMicros > 1_000, `cost ${costMicros}`);

      const events = () =>
        receiver.deliveries
          .filter((d) => d.headers['x-service-signature'])
          .map((d) => JSON.parse(d.body))
          .filter((e) => e.event_type === 'key.limit_reached' && e.key_id === keyId);
      const mails = (percent: number) =>
        a.mails.filter((m) => m.to === email && m.subject.includes(`${percent}% of its spending limit`));
      const setLimit = async (micros: number) => {
        const changed = await a.call('PATCH', `/api/keys/${keyId}`, {
          key,
          body: { limit_usd: micros / 1e6, limit_period: 'monthly' },
        });
        assert.equal(changed.status, 200, JSON.stringify(changed.body));
      };
      const passes = async () => {
        await Promise.all([a.services.cycle.alertPass(), b.services.cycle.alertPass()]);
        await a.services.cycle.alertPass();
      };

      // Spent is 90% of the limit: the 80% crossing only.
      await setLimit(Math.floor(costMicros / 0.9));
      await until(async () => {
        await passes();
        return events().length >= 1;
      }, 'the 80% event');
      await passes();
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.deepEqual(
        events().map((e) => e.percent),
        [80],
      );
      const first = events()[0];
      assert.equal(first.key_name, 'ci');
      assert.equal(first.period, 'monthly');
      assert.match(first.timestamp, /Z$/);
      await until(() => mails(80).length === 1, 'the 80% e-mail');

      // The limit lowered to what was spent: the 100% crossing, the 80% one not again.
      await setLimit(costMicros);
      await until(async () => {
        await passes();
        return events().length >= 2;
      }, 'the 100% event');
      await passes();
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.deepEqual(
        events().map((e) => e.percent),
        [80, 100],
      );
      await until(() => mails(100).length === 1, 'the 100% e-mail');
      assert.equal(mails(80).length, 1, 'the 80% e-mail is not sent again');

      // Raised well above: nothing; lowered again: the crossings are new and alert again.
      await setLimit(costMicros * 10);
      await passes();
      assert.equal(events().length, 2);
      await setLimit(costMicros);
      await until(async () => {
        await passes();
        return events().length >= 4;
      }, 'the re-armed crossings');
      assert.deepEqual(
        events()
          .map((e) => e.percent)
          .sort(),
        [100, 100, 80, 80],
      );
    });
  });
}
