import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import Stripe from 'stripe';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';
import { until } from './helpers/until.ts';

const FAST = { webhookRetryDelaysMs: [150, 150, 150], webhookTimeoutMs: 400, webhookPollMs: 25 };
const WEBHOOK_SECRET = 'whsec_test_stripe_subscriptions';
const signer = new Stripe('sk_test_fake');

/**
 * A stand-in for Stripe on loopback. It answers the two API calls Tollgate makes (Checkout Session create,
 * subscription update) as Stripe documents them, and, like Stripe, sends events signed with the endpoint's
 * secret (Stripe-Signature) to the webhook route: the shapes of API version 2025-03-31 and later (the
 * invoice's subscription under `parent.subscription_details`).
 */
class FakeStripe {
  readonly sessions: URLSearchParams[] = [];
  readonly updates: { id: string; form: URLSearchParams }[] = [];
  readonly subscriptions = new Map<string, Record<string, unknown>>();
  webhookUrl = '';
  #events = 0;
  #server: Server;

  constructor() {
    this.#server = createServer((request, response) => {
      let body = '';
      request.on('data', (piece: Buffer) => (body += piece.toString()));
      request.on('end', () => {
        const form = new URLSearchParams(body);
        const answer = (object: unknown) => {
          response.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_fake' });
          response.end(JSON.stringify(object));
        };
        if (request.method === 'POST' && request.url === '/v1/checkout/sessions') {
          this.sessions.push(form);
          const id = `cs_test_${this.sessions.length}`;
          return answer({
            id,
            object: 'checkout.session',
            mode: form.get('mode'),
            status: 'open',
            payment_status: 'unpaid',
            client_reference_id: form.get('client_reference_id'),
            metadata: { order_id: form.get('metadata[order_id]') },
            url: `https://checkout.stripe.com/c/pay/${id}`,
            currency: 'usd',
            amount_total: Number(form.get('line_items[0][price_data][unit_amount]')),
            subscription: null,
          });
        }
        const update = /^\/v1\/subscriptions\/([^/]+)$/.exec(request.url ?? '');
        if (request.method === 'POST' && update) {
          const subscription = this.subscriptions.get(update[1]!);
          if (!subscription) {
            response.writeHead(404, { 'content-type': 'application/json' });
            return response.end(
              JSON.stringify({ error: { type: 'invalid_request_error', message: 'No such subscription' } }),
            );
          }
          this.updates.push({ id: update[1]!, form });
          subscription['cancel_at_period_end'] = form.get('cancel_at_period_end') === 'true';
          return answer(subscription);
        }
        response.writeHead(404, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: { type: 'invalid_request_error', message: 'unknown path' } }));
      });
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  close(): void {
    this.#server.close();
  }

  /** Sends one signed event to Tollgate's webhook route; resolves to the route's `result`. */
  async send(type: string, object: Record<string, unknown>, id = `evt_test_${++this.#events}`) {
    const payload = JSON.stringify({
      id,
      object: 'event',
      api_version: '2025-03-31.basil',
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type,
      data: { object },
    });
    const answer = await fetch(this.webhookUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'stripe-signature': signer.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }),
      },
      body: payload,
    });
    assert.equal(answer.status, 200, await answer.clone().text());
    return { result: ((await answer.json()) as { result: string }).result, id, payload };
  }

  /** The customer completes the Checkout Session of `session`: a subscription starts and its first invoice is paid. */
  async completeSubscriptionCheckout(session: URLSearchParams) {
    const subscriptionId = `sub_test_${this.subscriptions.size + 1}`;
    const now = Math.floor(Date.now() / 1000);
    const metadata = {
      order_id: session.get('subscription_data[metadata][order_id]'),
      account_id: session.get('subscription_data[metadata][account_id]'),
      plan: session.get('subscription_data[metadata][plan]'),
    };
    const amount = Number(session.get('line_items[0][price_data][unit_amount]'));
    this.subscriptions.set(subscriptionId, {
      id: subscriptionId,
      object: 'subscription',
      status: 'active',
      cancel_at_period_end: false,
      customer: 'cus_test_1',
      metadata,
      items: {
        object: 'list',
        data: [
          {
            id: 'si_test_1',
            object: 'subscription_item',
            current_period_start: now,
            current_period_end: now + 30 * 86_400,
            price: { id: 'price_test_1', object: 'price', unit_amount: amount, currency: 'usd' },
          },
        ],
      },
    });
    const completed = await this.send('checkout.session.completed', {
      id: `cs_test_${this.sessions.indexOf(session) + 1}`,
      object: 'checkout.session',
      mode: 'subscription',
      client_reference_id: session.get('client_reference_id'),
      metadata: { order_id: session.get('metadata[order_id]') },
      payment_status: 'paid',
      status: 'complete',
      amount_total: amount,
      currency: 'usd',
      customer: 'cus_test_1',
      subscription: subscriptionId,
    });
    const firstInvoice = await this.send(
      'invoice.paid',
      this.invoice(subscriptionId, 'subscription_create', true),
    );
    return { subscriptionId, completed: completed.result, firstInvoice: firstInvoice.result };
  }

  #invoices = 0;
  /** An invoice object of the subscription, as Stripe sends it in invoice.* events. */
  invoice(subscriptionId: string, reason: string, paid: boolean, id = `in_test_${++this.#invoices}`) {
    const subscription = this.subscriptions.get(subscriptionId)!;
    const amount = (subscription['items'] as any).data[0].price.unit_amount as number;
    return {
      id,
      object: 'invoice',
      billing_reason: reason,
      collection_method: 'charge_automatically',
      currency: 'usd',
      customer: subscription['customer'],
      amount_due: amount,
      amount_paid: paid ? amount : 0,
      amount_remaining: paid ? 0 : amount,
      attempt_count: 1,
      attempted: true,
      status: paid ? 'paid' : 'open',
      parent: {
        type: 'subscription_details',
        quote_details: null,
        subscription_details: {
          subscription: subscriptionId,
          metadata: subscription['metadata'],
        },
      },
    };
  }

  subscription(id: string, changes: Record<string, unknown> = {}) {
    const subscription = this.subscriptions.get(id)!;
    Object.assign(subscription, changes);
    return { ...subscription };
  }
}

for (const backend of BACKENDS) {
  const skip = await backend.unavailable();
  describe(`Stripe subscriptions on ${backend.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let server: TestServer;
    let receiver: Receiver;
    const stripe = new FakeStripe();

    before(async () => {
      opened = await backend.open();
      receiver = await startReceiver();
      const apiBase = await stripe.listen();
      server = await startTestServer({
        backend: opened,
        yaml: { simulator: { chunk_interval_ms: 0 } },
        env: { STRIPE_SECRET_KEY: 'sk_test_fake', STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET },
        extra: { ...FAST, stripeApiBase: apiBase },
      });
      stripe.webhookUrl = `${server.url}/api/payments/stripe/webhook`;
    });
    after(async () => {
      await server?.close();
      stripe.close();
      await receiver?.close();
      await opened?.cleanup();
    });

    const chat = (key: string) =>
      server.call('POST', '/v1/chat/completions', {
        key,
        body: { model: 'model-b', max_tokens: 5, messages: [{ role: 'user', content: 'hello' }] },
      });

    it('renews three times, fails a payment into grace, and ends when cancelled', async () => {
      const email = `stripe-sub-${process.pid}-${Date.now()}@example.com`;
      const { key, accountId } = await server.register(email);
      const endpoint = await server.call('PUT', '/api/webhooks/endpoint', {
        key,
        body: { url: receiver.url },
      });
      assert.equal(endpoint.status, 200);

      const checkout = await server.call('POST', '/api/billing/checkout', { key, body: { plan: 'starter' } });
      assert.equal(checkout.status, 201, JSON.stringify(checkout.body));
      const session = stripe.sessions.at(-1)!;
      assert.equal(session.get('mode'), 'subscription');
      assert.equal(session.get('line_items[0][price_data][recurring][interval]'), 'day');
      assert.equal(session.get('line_items[0][price_data][recurring][interval_count]'), '30');
      assert.equal(session.get('line_items[0][price_data][unit_amount]'), '2000');
      assert.equal(session.get('subscription_data[metadata][account_id]'), accountId);

      const started = await stripe.completeSubscriptionCheckout(session);
      assert.equal(started.completed, 'applied');
      assert.equal(started.firstInvoice, 'ignored', 'the first invoice is the checkout itself');
      const sub0 = (await server.call('GET', '/api/billing/subscription', { key })).body.subscription;
      assert.equal(sub0.status, 'active');
      assert.equal(sub0.plan, 'starter');
      const firstEnd = Date.parse(sub0.current_period_end);

      const renewals: string[] = [];
      for (let month = 1; month <= 3; month++) {
        const invoice = stripe.invoice(started.subscriptionId, 'subscription_cycle', true);
        const sent = await stripe.send('invoice.paid', invoice);
        assert.equal(sent.result, 'applied', `renewal ${month}`);
        renewals.push(invoice.id);
        if (month === 1) {
          const replay = await stripe.send('invoice.paid', invoice, sent.id);
          assert.equal(replay.result, 'duplicate', 'the same event again');
          const again = await stripe.send('invoice.paid', invoice);
          assert.equal(again.result, 'duplicate', 'the same invoice under another event id');
        }
      }
      const sub3 = (await server.call('GET', '/api/billing/subscription', { key })).body.subscription;
      assert.equal(sub3.status, 'active');
      const thirdEnd = Date.parse(sub3.current_period_end);
      assert.ok(Math.abs(thirdEnd - firstEnd - 90 * 86_400_000) < 60_000, 'three periods later');

      const mine = () =>
        receiver.deliveries
          .map((d) => JSON.parse(d.body))
          .filter((e) => e.customer_email === email || e.event_type === 'payment.failed');
      await until(
        () => mine().filter((e) => e.event_type === 'payment.success').length === 4,
        'four payments',
      );
      const successes = mine().filter((e) => e.event_type === 'payment.success');
      assert.ok(
        successes.every((e) => e.plan === 'starter' && e.amount === 20),
        JSON.stringify(successes),
      );
      const invoices = (await server.call('GET', '/api/invoices', { key })).body;
      assert.equal(invoices.data.length, 4, 'one invoice per payment');

      const failed = await stripe.send(
        'invoice.payment_failed',
        stripe.invoice(started.subscriptionId, 'subscription_cycle', false),
      );
      assert.equal(failed.result, 'applied');
      const orders = new Set(
        (await server.call('GET', '/api/billing/orders', { key })).body.data.map((o: any) => o.order_id),
      );
      await until(
        () => mine().some((e) => e.event_type === 'payment.failed' && orders.has(e.order_id)),
        'payment.failed',
      );
      const failedEvent = mine().find((e) => e.event_type === 'payment.failed' && orders.has(e.order_id));
      assert.deepEqual(Object.keys(failedEvent).sort(), ['event_type', 'order_id', 'reason', 'timestamp']);
      await until(
        () => server.mails.some((m) => m.to === email && /renewal failed/.test(m.subject)),
        'the e-mail',
      );
      const pastDue = (await server.call('GET', '/api/billing/subscription', { key })).body.subscription;
      assert.equal(pastDue.status, 'past_due');
      assert.ok(pastDue.grace_until, 'a grace period');
      assert.equal((await chat(key)).status, 200, 'served through the grace period');

      const cancelled = await server.call('POST', '/api/billing/subscription/cancel', { key });
      assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
      assert.equal(stripe.updates.at(-1)?.id, started.subscriptionId);
      assert.equal(stripe.updates.at(-1)?.form.get('cancel_at_period_end'), 'true');
      assert.equal(cancelled.body.subscription.cancel_at_period_end, true);
      const mirrored = await stripe.send(
        'customer.subscription.updated',
        stripe.subscription(started.subscriptionId, { cancel_at_period_end: true }),
      );
      assert.equal(mirrored.result, 'applied');
      assert.equal((await chat(key)).status, 200, 'a cancelled subscription serves until it ends');

      const deleted = await stripe.send(
        'customer.subscription.deleted',
        stripe.subscription(started.subscriptionId, { status: 'canceled' }),
      );
      assert.equal(deleted.result, 'applied');
      const ended = await chat(key);
      assert.equal(ended.status, 402, JSON.stringify(ended.body));
      assert.match(ended.body.error.message, /subscription expired/);
      const last = (await server.call('GET', '/api/billing/subscription', { key })).body.subscription;
      assert.ok(last.status === 'expired' || last.status === 'canceled', last.status);
    });

    it("a signed event for another account's subscription changes nothing", async () => {
      const { key, accountId } = await server.register();
      const checkout = await server.call('POST', '/api/billing/checkout', { key, body: { plan: 'starter' } });
      assert.equal(checkout.status, 201);
      const started = await stripe.completeSubscriptionCheckout(stripe.sessions.at(-1)!);
      assert.equal(started.completed, 'applied');
      const other = await server.register();
      const forged = stripe.invoice(started.subscriptionId, 'subscription_cycle', true);
      forged.parent.subscription_details.metadata = { account_id: other.accountId };
      assert.equal((await stripe.send('invoice.paid', forged)).result, 'ignored');
      const deleted = stripe.subscription(started.subscriptionId, { status: 'canceled' });
      (deleted as any).metadata = { account_id: other.accountId };
      assert.equal((await stripe.send('customer.subscription.deleted', deleted)).result, 'ignored');
      assert.notEqual(accountId, other.accountId);
      assert.equal((await chat(key)).status, 200);
    });
  });
}
