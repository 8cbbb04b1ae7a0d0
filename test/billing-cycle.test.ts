import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { connectRedis } from '../src/composition/connect-redis.ts';
import { createStore, type Store } from '../src/store/store.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { REDIS_URL, redisUnavailable, testPrefix } from './helpers/redis.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';
import { until } from './helpers/until.ts';

const DAY = 86_400_000;
const BIN = fileURLToPath(new URL('../src/cli/tollgate.js', import.meta.url));
const silent = pino({ level: 'silent' });
const FAST = { webhookRetryDelaysMs: [150, 150, 150], webhookTimeoutMs: 400, webhookPollMs: 25 };

/**
 * Months of the billing cycle in seconds, with the test provider and the billing clock: a Starter subscription
 * renews (a payment.success and an invoice each time), its card fails (payment.failed, e-mail, grace), and it
 * expires (402 "subscription expired"). On PostgreSQL two instances with Redis holds run the renewal job at
 * once: each renewal is still charged once.
 */
const variants: { name: string; backend: (typeof BACKENDS)[number]; redis: boolean }[] = [];
for (const backend of BACKENDS) variants.push({ name: backend.name, backend, redis: false });
const pgBackend = BACKENDS.find((b) => b.name === 'postgres');
if (pgBackend) variants.push({ name: 'postgres + Redis, two instances', backend: pgBackend, redis: true });

for (const variant of variants) {
  const skip =
    (await variant.backend.unavailable()) ?? (variant.redis ? await redisUnavailable() : undefined);
  describe(`billing cycle on ${variant.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let a: TestServer;
    let b: TestServer | undefined;
    let receiver: Receiver;
    const stores: Store[] = [];
    const redisPrefix = testPrefix();

    before(async () => {
      opened = await variant.backend.open();
      receiver = await startReceiver();
      // A small included quota (USD 0.002) so a few requests use it twice over; no trial credit in the way.
      const yaml = {
        simulator: { chunk_interval_ms: 0 },
        plans: { starter: { monthly_allowance_usd: 0.002 } },
        trial: { credit_usd: 0 },
      };
      if (!variant.redis) {
        a = await startTestServer({ backend: opened, yaml, extra: FAST });
        return;
      }
      const instance = async (): Promise<TestServer> => {
        const backends = connectRedis(REDIS_URL, 'local', silent, redisPrefix.prefix);
        await backends.ready(2000);
        const ledgerStore = createStore(opened.reopen());
        stores.push(ledgerStore);
        return startTestServer({
          backend: opened,
          ownConnection: true,
          yaml,
          extra: {
            ...FAST,
            limiter: backends.limiter,
            bus: backends.bus,
            holds: backends.holds(ledgerStore.ledger),
          },
        });
      };
      a = await instance();
      b = await instance();
    });
    after(async () => {
      await a?.close();
      await b?.close();
      for (const store of stores) await store.close();
      await receiver?.close();
      await opened?.cleanup();
      if (variant.redis) await redisPrefix.cleanup();
    });

    let counter = 0;
    const customer = async () => {
      const email = `cycle${++counter}-${process.pid}-${Date.now()}@example.com`;
      const registered = await a.register(email);
      const endpoint = await a.call('PUT', '/api/webhooks/endpoint', {
        key: registered.key,
        body: { url: receiver.url },
      });
      assert.equal(endpoint.status, 200);
      return { ...registered, email };
    };
    const subscribe = async (key: string, plan: string) => {
      const checkout = await a.call('POST', '/api/billing/checkout', { key, body: { plan } });
      assert.equal(checkout.status, 201, JSON.stringify(checkout.body));
      const paid = await fetch(checkout.body.checkout_url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ outcome: 'success' }),
      });
      assert.equal(paid.status, 200);
      return checkout.body.order_id as string;
    };
    const advance = async (accountId: string, days: number) => {
      const moved = await a.call('POST', '/api/admin/billing/advance', {
        key: ADMIN_KEY,
        body: { account_id: accountId, days },
      });
      assert.equal(moved.status, 200, JSON.stringify(moved.body));
      return moved.body;
    };
    const eventsOf = (email: string, orderIds: Set<string>) =>
      receiver.deliveries
        .map((d) => JSON.parse(d.body))
        .filter((e) => e.customer_email === email || orderIds.has(e.order_id));
    const ordersOf = async (key: string): Promise<Set<string>> =>
      new Set((await a.call('GET', '/api/billing/orders', { key })).body.data.map((o: any) => o.order_id));
    const chat = (key: string) =>
      a.call('POST', '/v1/chat/completions', {
        key,
        body: { model: 'model-b', max_tokens: 5, messages: [{ role: 'user', content: 'hello' }] },
      });

    it('a Starter subscription renews three times: three more payment.success events and invoices, numbered without gaps', async () => {
      const { key, accountId, email } = await customer();
      const first = await subscribe(key, 'starter');
      const sub = (await a.call('GET', '/api/billing/subscription', { key })).body.subscription;
      assert.equal(sub.status, 'active');
      assert.equal(sub.plan, 'starter');
      const renewal = Date.parse(sub.next_renewal_at);
      assert.ok(Math.abs(renewal - (Date.now() + 30 * DAY)) < 60_000, `next renewal ${sub.next_renewal_at}`);

      for (let month = 1; month <= 3; month++) {
        const moved = await advance(accountId, 30);
        assert.equal(moved.subscription.status, 'active');
        assert.ok(Date.parse(moved.billing_time) >= Date.now() + month * 30 * DAY - 60_000);
      }
      const orders = await ordersOf(key);
      await until(() => eventsOf(email, orders).length === 4, 'four payment events');
      // On two instances each renewal job also runs: nothing is charged twice.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const events = eventsOf(email, orders);
      assert.equal(events.length, 4, JSON.stringify(events));
      assert.ok(
        events.every((e) => e.event_type === 'payment.success' && e.plan === 'starter' && e.amount === 20),
      );
      assert.ok(events.some((e) => e.order_id === first));
      const stamps = events.map((e) => Date.parse(e.timestamp)).sort((x, y) => x - y);
      assert.ok(stamps[3]! - stamps[0]! >= 89 * DAY, 'renewal events carry billing time, a month apart');

      const invoices = (await a.call('GET', '/api/invoices', { key })).body;
      assert.equal(invoices.object, 'list');
      assert.equal(invoices.data.length, 4);
      const numbers = invoices.data
        .map((i: any) => Number(i.number.slice(3)))
        .sort((x: number, y: number) => x - y);
      for (let i = 1; i < numbers.length; i++) assert.equal(numbers[i], numbers[i - 1] + 1, 'no gaps');
      const one = await a.call('GET', `/api/invoices/${invoices.data[0].id}`, { key });
      assert.equal(one.status, 200);
      assert.equal(one.body.total_usd, 20);
      assert.equal(one.body.buyer.email, email);
      assert.match(one.body.lines[0].description, /^Starter plan, \d{4}-\d{2}-\d{2} to \d{4}-\d{2}-\d{2}$/);
      const other = await a.register();
      assert.equal(
        (await a.call('GET', `/api/invoices/${invoices.data[0].id}`, { key: other.key })).status,
        404,
      );

      const account = await a.call('GET', '/api/account', { key });
      assert.equal(account.body.plan, 'starter');
      assert.equal((await chat(key)).status, 200, 'the renewed plan serves');
    });

    it('a declined card: payment.failed and an e-mail, the plan serves through the grace period, then 402 "subscription expired"', async () => {
      const { key, accountId, email } = await customer();
      await subscribe(key, 'starter');
      const card = await a.call('PUT', '/api/billing/test-card', { key, body: { declines: true } });
      assert.equal(card.status, 200);
      assert.equal(card.body.subscription.test_card_declines, true);

      const moved = await advance(accountId, 30);
      assert.equal(moved.subscription.status, 'past_due');
      assert.equal(moved.subscription.failed_attempts, 1);
      assert.ok(moved.subscription.grace_until);
      const orders = await ordersOf(key);
      await until(
        () => eventsOf(email, orders).some((e) => e.event_type === 'payment.failed'),
        'payment.failed',
      );
      const failed = eventsOf(email, orders).find((e) => e.event_type === 'payment.failed');
      assert.deepEqual(Object.keys(failed).sort(), ['event_type', 'order_id', 'reason', 'timestamp']);
      assert.equal(failed.reason, 'card_declined');
      await until(
        () => a.mails.some((m) => m.to === email && /renewal failed/.test(m.subject)),
        'the e-mail',
      );
      assert.equal((await chat(key)).status, 200, 'served during the grace period');

      const expired = await advance(accountId, 7);
      assert.equal(expired.subscription.status, 'expired');
      assert.ok(expired.subscription.failed_attempts >= 2, 'retried within the grace period');
      const refused = await chat(key);
      assert.equal(refused.status, 402);
      assert.equal(refused.body.error.code, 'payment_required');
      assert.match(refused.body.error.message, /^subscription expired/);
      await until(
        () => a.mails.some((m) => m.to === email && /expired/.test(m.subject)),
        'the expiry e-mail',
      );
    });

    it('cancel at period end, resume, cancel again: no charge at the end, then 402', async () => {
      const { key, accountId, email } = await customer();
      await subscribe(key, 'starter');
      const cancelled = await a.call('POST', '/api/billing/subscription/cancel', { key });
      assert.equal(cancelled.status, 200);
      assert.equal(cancelled.body.subscription.cancel_at_period_end, true);
      assert.equal(cancelled.body.subscription.next_renewal_at, null);
      const resumed = await a.call('POST', '/api/billing/subscription/resume', { key });
      assert.equal(resumed.body.subscription.cancel_at_period_end, false);
      assert.ok(resumed.body.subscription.next_renewal_at);
      await a.call('POST', '/api/billing/subscription/cancel', { key });
      const ended = await advance(accountId, 31);
      assert.equal(ended.subscription.status, 'canceled');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(eventsOf(email, await ordersOf(key)).length, 1, 'only the purchase was charged');
      assert.equal((await chat(key)).status, 402);
      assert.equal((await a.call('POST', '/api/billing/subscription/resume', { key })).status, 409);
    });

    it('upgrade now with the unused part credited; downgrade at the period end', async () => {
      const { key, accountId } = await customer();
      await subscribe(key, 'starter');
      await advance(accountId, 15);
      const up = await a.call('POST', '/api/billing/subscription/change', { key, body: { plan: 'pro' } });
      assert.equal(up.status, 200, JSON.stringify(up.body));
      assert.equal(up.body.subscription.plan, 'pro');
      assert.equal((await a.call('GET', '/api/account', { key })).body.plan, 'pro');
      const invoice = (await a.call('GET', '/api/invoices', { key })).body.data[0];
      assert.equal(invoice.lines.length, 2);
      assert.equal(invoice.lines[0].amount_usd, 100);
      // Half of Starter's USD 20 period was left (15 of 30 days), within a second of clock drift.
      assert.ok(Math.abs(invoice.lines[1].amount_usd + 10) < 0.001, JSON.stringify(invoice.lines));
      assert.ok(Math.abs(invoice.total_usd - 90) < 0.001);

      const down = await a.call('POST', '/api/billing/subscription/change', {
        key,
        body: { plan: 'starter' },
      });
      assert.equal(down.body.subscription.plan, 'pro');
      assert.equal(down.body.subscription.next_plan, 'starter');
      const renewed = await advance(accountId, 30);
      assert.equal(renewed.subscription.plan, 'starter');
      assert.equal(renewed.subscription.next_plan, null);
      assert.equal((await a.call('GET', '/api/account', { key })).body.plan, 'starter');
      assert.equal((await a.call('GET', '/api/invoices', { key })).body.data[0].total_usd, 20);
    });

    it('the billing clock and the test card are refused where they do not apply', async () => {
      const { key } = await customer();
      assert.equal(
        (await a.call('PUT', '/api/billing/test-card', { key, body: { declines: true } })).status,
        404,
      );
      const noAdmin = await a.call('POST', '/api/admin/billing/advance', {
        key,
        body: { account_id: 'acct_x', days: 1 },
      });
      assert.equal(noAdmin.status, 403);
      const bad = await a.call('POST', '/api/admin/billing/advance', {
        key: ADMIN_KEY,
        body: { account_id: 'acct_x', days: 0 },
      });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.code, 'invalid_request');
      const unknown = await a.call('POST', '/api/admin/billing/advance', {
        key: ADMIN_KEY,
        body: { account_id: 'acct_nobody', days: 1 },
      });
      assert.equal(unknown.status, 404);
    });

    // The CLI talks to one server over HTTP: the store behind it does not matter, so it runs once.
    if (variant.name === 'sqlite')
      it('the CLI moves the billing clock by e-mail address', async () => {
        const { key, email } = await customer();
        await subscribe(key, 'starter');
        // Asynchronously: the server answering the CLI runs in this process.
        const run = await promisify(execFile)(
          process.execPath,
          [BIN, 'billing', 'advance', email, '30', '--json'],
          {
            env: { ...process.env, NO_COLOR: '1', TOLLGATE_URL: a.url, TOLLGATE_ADMIN_KEY: ADMIN_KEY },
            encoding: 'utf8',
          },
        );
        const answer = JSON.parse(run.stdout);
        assert.equal(answer.subscription.status, 'active');
        assert.ok(Date.parse(answer.billing_time) >= Date.now() + 30 * DAY - 60_000);
        assert.equal((await a.call('GET', '/api/invoices', { key })).body.data.length, 2, 'renewed once');
      });

    const spentMicros = async (accountId: string): Promise<number> => {
      await a.services.settlements.flush();
      const row = await opened.db.get<{ s: number | string | null }>(
        'SELECT SUM(cost_micros) AS s FROM usage_records WHERE account_id = $1',
        [accountId],
      );
      return Number(row?.s ?? 0);
    };
    const useTwiceTheQuota = async (key: string, accountId: string): Promise<number> => {
      for (let i = 0; i < 20 && (await spentMicros(accountId)) < 4_000; i++) {
        const answer = await a.call('POST', '/v1/chat/completions', {
          key,
          body: { model: 'model-a', max_tokens: 100, messages: [{ role: 'user', content: `hello ${i}` }] },
        });
        assert.equal(answer.status, 200, `served beyond the quota: ${JSON.stringify(answer.body)}`);
      }
      const spent = await spentMicros(accountId);
      assert.ok(spent >= 4_000, `spent ${spent}`);
      return spent;
    };

    it('beyond the included quota a Starter account is served and accrues overage, invoiced at renewal at 1.2 × list price to the µUSD', async () => {
      const { key, accountId, email } = await customer();
      await subscribe(key, 'starter');
      const spent = await useTwiceTheQuota(key, accountId);
      const overageList = spent - 2_000;
      const expected = Math.ceil((overageList * 12_000) / 10_000);
      const sub = (await a.call('GET', '/api/billing/subscription', { key })).body.subscription;
      assert.equal(sub.overage_price_multiplier, 1.2);
      assert.equal(sub.overage_cap_usd, 50);
      assert.equal(Math.round(sub.overage_accrued_list_usd * 1e6), overageList);
      assert.equal(Math.round(sub.overage_accrued_usd * 1e6), expected);

      await advance(accountId, 30);
      const invoice = (await a.call('GET', '/api/invoices', { key })).body.data[0];
      assert.equal(invoice.lines.length, 2, JSON.stringify(invoice.lines));
      assert.equal(invoice.lines[0].amount_usd, 20);
      assert.match(invoice.lines[1].description, /^Overage: USD [\d.]+ at list prices × 1\.2/);
      assert.equal(Math.round(invoice.lines[1].amount_usd * 1e6), expected);
      assert.equal(Math.round(invoice.total_usd * 1e6), 20_000_000 + expected);
      const orders = await ordersOf(key);
      await until(() => eventsOf(email, orders).length === 2, 'the renewal event');
      const renewal = eventsOf(email, orders).find((e) => e.order_id === invoice.order_id);
      assert.equal(Math.round(renewal.amount * 1e6), 20_000_000 + expected);
      const after = (await a.call('GET', '/api/billing/subscription', { key })).body.subscription;
      assert.equal(after.overage_accrued_list_usd, 0, 'the invoiced overage is settled');
    });

    it('an overage cap of 0 stops at the quota with 402', async () => {
      const { key } = await customer();
      await subscribe(key, 'starter');
      const capped = await a.call('PUT', '/api/billing/overage-cap', { key, body: { cap_usd: 0 } });
      assert.equal(capped.status, 200);
      assert.equal(capped.body.subscription.overage_cap_usd, 0);
      let refused;
      for (let i = 0; i < 20 && !refused; i++) {
        const answer = await a.call('POST', '/v1/chat/completions', {
          key,
          body: { model: 'model-a', max_tokens: 100, messages: [{ role: 'user', content: `hello ${i}` }] },
        });
        await a.services.settlements.flush();
        if (answer.status !== 200) refused = answer;
      }
      assert.equal(refused?.status, 402);
      assert.equal(refused.body.error.code, 'payment_required');
    });

    it('a failed charge suspends overage but not prepaid credit', async () => {
      const { key, accountId } = await customer();
      await subscribe(key, 'starter');
      await useTwiceTheQuota(key, accountId);
      await a.call('PUT', '/api/billing/test-card', { key, body: { declines: true } });
      const moved = await advance(accountId, 30);
      assert.equal(moved.subscription.status, 'past_due');
      assert.ok(moved.subscription.overage_owed_list_usd > 0, 'the failed overage is owed apart');
      const sub = (await a.call('GET', '/api/billing/subscription', { key })).body.subscription;
      assert.equal(sub.overage_accrued_list_usd, 0);
      await a.services.settlements.flush();
      // No overage now: a request beyond the (kept) allowance is refused ... With holds in Redis, an instance
      // drops its copy of the account's credit when the ledger-moves watch reads the change (every second).
      let refused = await chat(key);
      for (let tries = 0; tries < 30 && refused.status === 200; tries++) {
        await delay(100);
        refused = await chat(key);
      }
      assert.equal(refused.status, 402);
      // ... and prepaid credit still serves.
      await a.call('PUT', '/api/billing/test-card', { key, body: { declines: false } });
      const checkout = await a.call('POST', '/api/billing/checkout', { key, body: { topup_usd: 5 } });
      await fetch(checkout.body.checkout_url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ outcome: 'success' }),
      });
      assert.equal((await chat(key)).status, 200);
    });

    it('alerts fire once each: renewal in 3 days, failed renewal, low balance; only subscribed types reach the endpoint', async () => {
      const { key, accountId, email } = await customer();
      await subscribe(key, 'starter');
      const alerts = await a.call('PUT', '/api/billing/alerts', {
        key,
        body: {
          low_balance_usd: 1,
          webhook_events: ['subscription.renewing', 'subscription.payment_failed', 'balance.low'],
        },
      });
      assert.equal(alerts.status, 200, JSON.stringify(alerts.body));
      assert.deepEqual(alerts.body.webhook_events, [
        'subscription.renewing',
        'subscription.payment_failed',
        'balance.low',
      ]);
      const bad = await a.call('PUT', '/api/billing/alerts', {
        key,
        body: { low_balance_usd: 1, webhook_events: ['payment.everything'] },
      });
      assert.equal(bad.status, 400);
      const alertEvents = (type: string) =>
        receiver.deliveries
          .filter((d) => d.headers['x-service-signature'])
          .map((d) => JSON.parse(d.body))
          .filter((e) => e.event_type === type && (e.customer_email === email || e.account === undefined))
          .filter((e) => type !== 'balance.low' || e.threshold === 1);
      const renewingOf = () =>
        receiver.deliveries
          .map((d) => JSON.parse(d.body))
          .filter((e) => e.event_type === 'subscription.renewing');
      const before = renewingOf().length;
      await advance(accountId, 27);
      await until(() => renewingOf().length === before + 1, 'subscription.renewing');
      await advance(accountId, 2);
      await a.services.cycle.alertPass();
      await b?.services.cycle.alertPass();
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(renewingOf().length, before + 1, 'once per renewal, on any number of instances');
      await until(
        () => a.mails.some((m) => m.to === email && /renews on/.test(m.subject)),
        'the renewal e-mail',
      );

      // The allowance (USD 0.002) is below the USD 1 threshold: one balance.low, not repeated.
      await until(() => alertEvents('balance.low').length >= 1, 'balance.low');
      await a.services.cycle.alertPass();
      assert.equal(a.mails.filter((m) => m.to === email && /balance is below/.test(m.subject)).length, 1);

      await a.call('PUT', '/api/billing/test-card', { key, body: { declines: true } });
      const failedBefore = receiver.deliveries
        .map((d) => JSON.parse(d.body))
        .filter((e) => e.event_type === 'subscription.payment_failed').length;
      await advance(accountId, 2);
      await until(
        () =>
          receiver.deliveries
            .map((d) => JSON.parse(d.body))
            .filter((e) => e.event_type === 'subscription.payment_failed').length ===
          failedBefore + 1,
        'subscription.payment_failed',
      );
      const failed = receiver.deliveries
        .map((d) => JSON.parse(d.body))
        .filter((e) => e.event_type === 'subscription.payment_failed')
        .at(-1);
      assert.equal(failed.reason, 'card_declined');
      assert.match(failed.timestamp, /Z$/);
      const trialEvents = receiver.deliveries
        .map((d) => JSON.parse(d.body))
        .filter((e) => e.event_type === 'trial.expiring');
      assert.equal(trialEvents.length, 0, 'not subscribed: not sent');
    });
  });
}
