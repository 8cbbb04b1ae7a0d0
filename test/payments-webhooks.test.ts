import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import Stripe from 'stripe';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

/** Retries 150 ms apart, seen by an outbox read every 25 ms (not the default second). */
const FAST_RETRIES = { webhookRetryDelaysMs: [150, 150, 150], webhookTimeoutMs: 400, webhookPollMs: 25 };

/**
 * A receiver's check, written from the spec alone (not with the project's signer): `sha256=` plus the lowercase
 * hex HMAC-SHA256 of the payload text keyed with the webhook secret, compared in constant time.
 */
function receiverAccepts(payload: string, secret: string, header: string): boolean {
  const expected = Buffer.from(
    `sha256=${createHmac('sha256', secret).update(payload, 'utf8').digest('hex')}`,
  );
  const given = Buffer.from(header);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
let customerCounter = 0;

for (const backend of BACKENDS) {
  const skip = await backend.unavailable();
  describe(`payments and signed webhooks on ${backend.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let server: TestServer;
    let receiver: Receiver;

    before(async () => {
      opened = await backend.open();
      receiver = await startReceiver();
      server = await startTestServer({ backend: opened, extra: FAST_RETRIES });
    });
    after(async () => {
      await server?.close();
      await receiver?.close();
      await opened?.cleanup();
    });

    const customer = async () => {
      const email = `customer${++customerCounter}-${process.pid}-${Date.now()}@example.com`;
      const registered = await server.register(email);
      const endpoint = await server.call('PUT', '/api/webhooks/endpoint', {
        key: registered.key,
        body: { url: receiver.url },
      });
      assert.equal(endpoint.status, 200);
      assert.match(endpoint.body.secret, /^whsec_/);
      return { ...registered, email, secret: endpoint.body.secret as string };
    };
    const pay = async (key: string, order: Record<string, unknown>, outcome: Record<string, unknown>) => {
      const checkout = await server.call('POST', '/api/billing/checkout', { key, body: order });
      assert.equal(checkout.status, 201, JSON.stringify(checkout.body));
      const page = await fetch(checkout.body.checkout_url);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /Test checkout/);
      const paid = await fetch(checkout.body.checkout_url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(outcome),
      });
      assert.equal(paid.status, 200);
      return checkout.body;
    };
    const eventsFor = (orderId: string) =>
      receiver.deliveries.filter((d) => JSON.parse(d.body).order_id === orderId);

    it('buying Starter sends a signed payment.success with exactly the spec’s fields, and the plan and limits change', async () => {
      const { key, secret, email } = await customer();
      const paidFrom = Date.now();
      const order = await pay(key, { plan: 'starter' }, { outcome: 'success' });
      assert.equal(order.status, 'pending');
      assert.equal(order.amount, 20);
      assert.equal(order.currency, 'USD');
      await waitUntil(() => eventsFor(order.order_id).length === 1);
      const delivery = eventsFor(order.order_id)[0]!;
      const event = JSON.parse(delivery.body);
      assert.deepEqual(Object.keys(event).sort(), [
        'amount',
        'currency',
        'customer_email',
        'event_type',
        'order_id',
        'plan',
        'timestamp',
      ]);
      assert.equal(event.event_type, 'payment.success');
      assert.equal(event.order_id, order.order_id);
      assert.equal(event.plan, 'starter');
      assert.equal(event.amount, 20);
      assert.equal(event.currency, 'USD');
      assert.equal(event.customer_email, email);
      assert.match(event.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/, 'ISO 8601 in UTC');
      const at = Date.parse(event.timestamp);
      assert.ok(at >= paidFrom - 1000 && at <= Date.now() + 1000, `timestamp ${event.timestamp}`);
      assert.equal(delivery.headers['content-type'], 'application/json');
      assert.match(String(delivery.headers['x-service-signature']), /^sha256=[0-9a-f]{64}$/);
      assert.ok(
        receiverAccepts(delivery.body, secret, String(delivery.headers['x-service-signature'])),
        'a receiver following the spec accepts it',
      );
      assert.ok(
        !receiverAccepts(
          delivery.body,
          'whsec_another_secret',
          String(delivery.headers['x-service-signature']),
        ),
        'another secret fails',
      );
      assert.ok(
        !receiverAccepts(
          delivery.body.replace('"amount":20', '"amount":2000'),
          secret,
          String(delivery.headers['x-service-signature']),
        ),
        'a tampered body fails',
      );
      assert.match(String(delivery.headers['x-service-event-id']), /^evt_/);
      assert.ok(Number(delivery.headers['x-service-timestamp']) > 1_700_000_000);
      const account = await server.call('GET', '/api/account', { key });
      assert.equal(account.body.plan, 'starter');
      assert.equal(account.body.limits.requests_per_minute, 60);
      assert.equal(account.body.credits.find((c: any) => c.kind === 'plan').amount_usd, 20);
      const orders = await server.call('GET', '/api/billing/orders', { key });
      assert.equal(orders.body.data[0].status, 'paid');
    });

    it('a declined card sends payment.failed with its reason, and credits nothing', async () => {
      const { key, secret } = await customer();
      const paidFrom = Date.now();
      const order = await pay(key, { topup_usd: 10 }, { outcome: 'failed', reason: 'insufficient_funds' });
      await waitUntil(() => eventsFor(order.order_id).length === 1);
      const delivery = eventsFor(order.order_id)[0]!;
      const event = JSON.parse(delivery.body);
      assert.deepEqual(Object.keys(event).sort(), ['event_type', 'order_id', 'reason', 'timestamp']);
      assert.equal(event.event_type, 'payment.failed');
      assert.equal(event.order_id, order.order_id);
      assert.equal(event.reason, 'insufficient_funds');
      assert.match(event.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/, 'ISO 8601 in UTC');
      const at = Date.parse(event.timestamp);
      assert.ok(at >= paidFrom - 1000 && at <= Date.now() + 1000, `timestamp ${event.timestamp}`);
      assert.ok(receiverAccepts(delivery.body, secret, String(delivery.headers['x-service-signature'])));
      const account = await server.call('GET', '/api/account', { key });
      assert.equal(account.body.balance_usd, 1, 'only the trial credit');
    });

    it('a top-up credits its amount; an order is applied at most once', async () => {
      const { key } = await customer();
      const order = await pay(key, { topup_usd: 12.5 }, { outcome: 'success' });
      const again = await fetch(order.checkout_url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"outcome":"success"}',
      });
      assert.equal(again.status, 409);
      const account = await server.call('GET', '/api/account', { key });
      assert.equal(account.body.balance_usd, 13.5);
      await waitUntil(() => eventsFor(order.order_id).length === 1);
      // No fixed wait: once the outbox has nothing left to send, nothing more can arrive for this order.
      await server.services.dispatcher.idle();
      const unsent = await opened.db.get<{ n: number }>(
        "SELECT COUNT(*) AS n FROM webhook_events WHERE status = 'pending'",
      );
      assert.equal(Number(unsent?.n), 0, 'the outbox is drained');
      const queued = await opened.db.get<{ n: number }>(
        'SELECT COUNT(*) AS n FROM webhook_events WHERE payload LIKE $1',
        [`%${order.order_id}%`],
      );
      assert.equal(Number(queued?.n), 1, 'one event queued for the order');
      assert.equal(eventsFor(order.order_id).length, 1, 'one event for one order');
    });

    it('checkout refuses what cannot be bought', async () => {
      const { key } = await server.register();
      for (const body of [
        { plan: 'enterprise' },
        { plan: 'gold' },
        { topup_usd: 1 },
        { topup_usd: 20_000 },
        { plan: 'pro', topup_usd: 10 },
        {},
      ]) {
        const response = await server.call('POST', '/api/billing/checkout', { key, body });
        assert.equal(response.status, 400, JSON.stringify(body));
        assert.equal(response.body.error.code, 'invalid_request');
      }
    });

    it('a receiver answering 500, then timing out, then 200 gets the same event id three times, and the log shows it', async () => {
      const { key } = await customer();
      const before = receiver.deliveries.length;
      receiver.answer({ status: 500 }, { hang: true });
      const queued = await server.call('POST', '/api/webhooks/test', { key });
      assert.equal(queued.status, 202);
      const arrived = (await receiver.waitFor(before + 3, 8_000)).slice(before);
      assert.deepEqual(
        arrived.map((d) => d.headers['x-service-event-id']),
        [queued.body.event_id, queued.body.event_id, queued.body.event_id],
      );
      let log: any[] = [];
      await waitUntil(async () => {
        log = (await server.call('GET', '/api/webhooks/deliveries', { key })).body.data;
        return log.length === 3;
      });
      const byAttempt = log.sort((a, b) => a.attempt - b.attempt);
      assert.deepEqual(
        byAttempt.map((d) => d.status_code),
        [500, null, 200],
      );
      assert.match(byAttempt[1].error, /no answer within 400 ms/);
      assert.ok(byAttempt.every((d) => typeof d.latency_ms === 'number'));

      const redelivered = await server.call('POST', `/api/webhooks/deliveries/${byAttempt[2].id}/redeliver`, {
        key,
      });
      assert.equal(redelivered.status, 202);
      const more = await receiver.waitFor(before + 4, 5_000);
      assert.equal(more[before + 3]!.headers['x-service-event-id'], queued.body.event_id);
    });

    it('the endpoint can be read, its secret rotated, and removed', async () => {
      const { key, secret } = await customer();
      const read = await server.call('GET', '/api/webhooks/endpoint', { key });
      assert.equal(read.body.secret, secret);
      const rotated = await server.call('POST', '/api/webhooks/endpoint/rotate-secret', { key });
      assert.notEqual(rotated.body.secret, secret);
      assert.equal((await server.call('DELETE', '/api/webhooks/endpoint', { key })).status, 200);
      assert.equal((await server.call('GET', '/api/webhooks/endpoint', { key })).status, 404);
    });
  });
}

describe('webhook endpoints are checked against server-side request forgery', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  before(async () => {
    opened = await BACKENDS[0]!.open();
    server = await startTestServer({ backend: opened, env: { TOLLGATE_WEBHOOK_ALLOW_PRIVATE: 'false' } });
  });
  after(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  it('refuses http, loopback, private, link-local and metadata addresses; accepts a public https one', async () => {
    const { key } = await server.register();
    for (const url of [
      'http://203.0.113.5/hook',
      'https://127.0.0.1/hook',
      'https://localhost/hook',
      'https://10.1.2.3/',
      'https://192.168.1.1/',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/',
      'https://[fd00::1]/',
      'ftp://203.0.113.5/',
      'not a url',
      'https://user:pw@203.0.113.5/',
    ]) {
      const response = await server.call('PUT', '/api/webhooks/endpoint', { key, body: { url } });
      assert.equal(response.status, 400, url);
      assert.equal(response.body.error.code, 'invalid_request');
    }
    const ok = await server.call('PUT', '/api/webhooks/endpoint', {
      key,
      body: { url: 'https://203.0.113.5/hook' },
    });
    assert.equal(ok.status, 200);
  });
});

describe('Stripe payments', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let stripeApi: import('node:http').Server;
  const webhookSecret = 'whsec_test_secret_for_tollgate';
  const stripe = new Stripe('sk_test_fake');
  const sessions: URLSearchParams[] = [];

  before(async () => {
    opened = await BACKENDS[0]!.open();
    // A stand-in for Stripe's API on loopback: it answers session creation as Stripe documents it.
    stripeApi = createServer((request, response) => {
      let body = '';
      request.on('data', (piece: Buffer) => (body += piece.toString()));
      request.on('end', () => {
        const form = new URLSearchParams(body);
        sessions.push(form);
        const id = `cs_test_${sessions.length}`;
        response.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_fake' });
        response.end(
          JSON.stringify({
            id,
            object: 'checkout.session',
            mode: 'payment',
            status: 'open',
            payment_status: 'unpaid',
            client_reference_id: form.get('client_reference_id'),
            metadata: { order_id: form.get('metadata[order_id]') },
            url: `https://checkout.stripe.com/c/pay/${id}`,
            currency: 'usd',
            amount_total: Number(form.get('line_items[0][price_data][unit_amount]')),
          }),
        );
      });
    });
    await new Promise<void>((resolve) => stripeApi.listen(0, '127.0.0.1', resolve));
    server = await startTestServer({
      backend: opened,
      env: { STRIPE_SECRET_KEY: 'sk_test_fake', STRIPE_WEBHOOK_SECRET: webhookSecret },
      extra: { stripeApiBase: `http://127.0.0.1:${(stripeApi.address() as AddressInfo).port}` },
    });
  });
  after(async () => {
    await server?.close();
    stripeApi?.close();
    await opened?.cleanup();
  });

  const deliver = (payload: string, signature: string) =>
    fetch(`${server.url}/api/payments/stripe/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': signature },
      body: payload,
    });

  it('a Stripe event delivered twice applies the plan once; a bad signature is refused', async () => {
    const { key, accountId } = await server.register();
    const checkout = await server.call('POST', '/api/billing/checkout', { key, body: { plan: 'pro' } });
    assert.equal(checkout.status, 201);
    assert.match(checkout.body.checkout_url, /^https:\/\/checkout\.stripe\.com\//);
    assert.equal(checkout.body.provider, 'stripe');
    const sent = sessions.at(-1)!;
    assert.equal(sent.get('mode'), 'subscription', 'a plan is a Stripe subscription');
    assert.equal(sent.get('line_items[0][price_data][unit_amount]'), '10000');
    assert.equal(sent.get('client_reference_id'), checkout.body.order_id);

    const payload = JSON.stringify({
      id: 'evt_test_1',
      object: 'event',
      api_version: '2025-01-27.acacia',
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type: 'checkout.session.completed',
      data: {
        object: {
          id: 'cs_test_1',
          object: 'checkout.session',
          client_reference_id: checkout.body.order_id,
          metadata: { order_id: checkout.body.order_id },
          payment_status: 'paid',
          status: 'complete',
          amount_total: 10000,
          currency: 'usd',
        },
      },
    });
    const signature = stripe.webhooks.generateTestHeaderString({ payload, secret: webhookSecret });
    const first = await deliver(payload, signature);
    assert.equal(first.status, 200);
    assert.equal(((await first.json()) as any).result, 'applied');
    const second = await deliver(payload, signature);
    assert.equal(((await second.json()) as any).result, 'duplicate');
    const replay = payload.replace('evt_test_1', 'evt_test_2');
    const third = await deliver(
      replay,
      stripe.webhooks.generateTestHeaderString({ payload: replay, secret: webhookSecret }),
    );
    assert.equal(
      ((await third.json()) as any).result,
      'duplicate',
      'a new event for a settled order changes nothing',
    );
    const plans = await opened.db.get<{ n: number }>(
      `SELECT COUNT(*) AS n FROM credit_grants WHERE account_id = $1 AND kind = 'plan'`,
      [accountId],
    );
    assert.equal(Number(plans?.n), 1, 'the plan was applied once');
    assert.equal((await server.call('GET', '/api/account', { key })).body.plan, 'pro');

    const forged = await deliver(payload.replace('"paid"', '"unpaid"'), signature);
    assert.equal(forged.status, 400);
  });
});

async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
