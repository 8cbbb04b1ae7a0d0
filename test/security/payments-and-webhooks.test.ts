import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import Stripe from 'stripe';
import { parseConfig } from '../../src/config/load-config.ts';
import { newId } from '../../src/core/ids.ts';
import type { OrderRecord } from '../../src/core/records.ts';
import { checkWebhookUrl } from '../../src/webhooks/url-guard.ts';
import { BACKENDS, type OpenedBackend } from '../helpers/backends.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** A pino logger whose lines the test can read. */
function capturingLogger(): { logger: pino.Logger; lines: () => any[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines: () => lines.map((line) => JSON.parse(line)) };
}

describe('signed Stripe events must match the order they complete', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  const webhookSecret = 'whsec_security_test_secret';
  const stripe = new Stripe('sk_test_fake');
  const log = capturingLogger();

  before(async () => {
    opened = await BACKENDS[0]!.open();
    server = await startTestServer({
      backend: opened,
      env: { STRIPE_SECRET_KEY: 'sk_test_fake', STRIPE_WEBHOOK_SECRET: webhookSecret },
      extra: { logger: log.logger },
    });
  });
  after(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  const order = async (accountId: string, provider: string, amountMicros: number): Promise<OrderRecord> => {
    const record: OrderRecord = {
      id: newId('ord'),
      accountId,
      kind: 'topup',
      plan: null,
      amountMicros,
      currency: 'USD',
      status: 'pending',
      reason: null,
      provider,
      providerRef: null,
      createdAt: Date.now(),
      completedAt: null,
    };
    await server.services.store.payments.insertOrder(record);
    return record;
  };

  const deliver = async (orderId: string, amountCents: number, currency = 'usd') => {
    const payload = JSON.stringify({
      id: newId('evt'),
      object: 'event',
      api_version: '2025-01-27.acacia',
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type: 'checkout.session.completed',
      data: {
        object: {
          id: newId('cs_test'),
          object: 'checkout.session',
          client_reference_id: orderId,
          metadata: { order_id: orderId },
          payment_status: 'paid',
          status: 'complete',
          amount_total: amountCents,
          currency,
        },
      },
    });
    const response = await fetch(`${server.url}/api/payments/stripe/webhook`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret: webhookSecret }),
      },
      body: payload,
    });
    return ((await response.json()) as { result: string }).result;
  };

  it('a USD 0.01 event does not credit a USD 500 order, nor one the test provider created', async () => {
    const { accountId } = await server.register();
    const dear = await order(accountId, 'stripe', 500_000_000);
    assert.equal(await deliver(dear.id, 1), 'refused');
    assert.equal(await deliver(dear.id, 50_000, 'eur'), 'refused', 'the currency counts too');
    const foreign = await order(accountId, 'test', 500_000_000);
    assert.equal(await deliver(foreign.id, 50_000), 'refused', 'an order of another provider');
    for (const id of [dear.id, foreign.id])
      assert.equal((await server.services.store.payments.order(id))?.status, 'pending');
    const refusals = log.lines().filter((line) => /does not match the order/.test(line.msg));
    assert.equal(refusals.length, 3);
    assert.equal(refusals[0].level, 50, 'logged as an error');

    assert.equal(await deliver(dear.id, 50_000), 'applied', 'the matching event still completes it');
    assert.equal((await server.services.store.payments.order(dear.id))?.status, 'paid');
  });
});

describe('webhook ports', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let receiver: Receiver;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    receiver = await startReceiver();
    server = await startTestServer({
      backend: opened,
      env: { TOLLGATE_WEBHOOK_PORTS: '443' },
      extra: { webhookRetryDelaysMs: [], webhookTimeoutMs: 400 },
    });
  });
  after(async () => {
    await server?.close();
    await receiver?.close();
    await opened?.cleanup();
  });

  it('a URL on a port other than 80 or 443 is refused when saved, by default', async () => {
    await assert.rejects(checkWebhookUrl('https://203.0.113.5:8080/hook', false), /port/);
    await assert.rejects(checkWebhookUrl('https://203.0.113.5:22/hook', false), /port/);
    assert.equal((await checkWebhookUrl('https://203.0.113.5/hook', false)).port, '');
    assert.equal((await checkWebhookUrl('https://203.0.113.5:443/hook', false)).hostname, '203.0.113.5');
    assert.deepEqual(parseConfig({}, {}).security.webhookPorts, [80, 443]);
    const refused = await server.call('PUT', '/api/webhooks/endpoint', {
      key: (await server.register()).key,
      body: { url: receiver.url },
    });
    assert.equal(refused.status, 400);
    assert.match(refused.body.error.message, /port/);
  });

  it('an endpoint on a refused port is never contacted, and the delivery log tells nothing of it', async () => {
    const { key, accountId } = await server.register();
    // Saved before the operator narrowed the ports.
    await server.services.store.webhooks.putEndpoint({
      accountId,
      url: receiver.url,
      secret: 'whsec_old',
      createdAt: Date.now(),
    });
    assert.equal((await server.call('POST', '/api/webhooks/test', { key })).status, 202);
    let deliveries: any[] = [];
    for (let i = 0; i < 100 && deliveries.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      deliveries = (await server.call('GET', '/api/webhooks/deliveries', { key })).body.data;
    }
    assert.equal(deliveries.length, 1);
    assert.equal(deliveries[0].status_code, null);
    assert.match(deliveries[0].error, /port is not allowed/);
    assert.equal(receiver.deliveries.length, 0);
  });
});
