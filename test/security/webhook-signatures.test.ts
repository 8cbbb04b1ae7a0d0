import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, type OpenedBackend } from '../helpers/backends.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** Five minutes either way: the tolerance Standard Webhooks recommends and docs/webhooks.md tells receivers. */
const TOLERANCE_S = 300;

/**
 * A receiver written from the Standard Webhooks specification alone: the key is the secret after `whsec_`,
 * base64-decoded; the signed text is `id.timestamp.body`; the header lists `v1,<base64>` entries. Refuses a
 * stale or future timestamp and an id it has already processed.
 */
function standardReceiver(secret: string, now: () => number) {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const processed = new Set<string>();
  return (headers: IncomingHttpHeaders, body: string): 'accepted' | 'duplicate' | 'stale' | 'forged' => {
    const id = String(headers['webhook-id']);
    const timestamp = String(headers['webhook-timestamp']);
    if (!/^\d+$/.test(timestamp) || Math.abs(now() / 1000 - Number(timestamp)) > TOLERANCE_S) return 'stale';
    const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
    const matches = String(headers['webhook-signature'])
      .split(' ')
      .filter((entry) => entry.startsWith('v1,'))
      .map((entry) => Buffer.from(entry.slice(3), 'base64'))
      .some((given) => given.length === expected.length && timingSafeEqual(given, expected));
    if (!matches) return 'forged';
    if (processed.has(id)) return 'duplicate';
    processed.add(id);
    return 'accepted';
  };
}

describe('webhook deliveries carry Standard Webhooks headers beside the spec signature', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let receiver: Receiver;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    receiver = await startReceiver();
    server = await startTestServer({
      backend: opened,
      extra: { webhookRetryDelaysMs: [50, 50], webhookTimeoutMs: 2_000 },
    });
  });
  after(async () => {
    await server?.close();
    await receiver?.close();
    await opened?.cleanup();
  });

  it('webhook-id, webhook-timestamp and webhook-signature verify independently; a replay is refused', async () => {
    const { key } = await server.register();
    const endpoint = await server.call('PUT', '/api/webhooks/endpoint', { key, body: { url: receiver.url } });
    const secret = endpoint.body.secret as string;
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{32}$/, 'standard base64, as the specification serializes it');
    assert.equal(Buffer.from(secret.slice(6), 'base64').length, 24, 'at least 24 random bytes');

    // A payment event: the first attempt is answered 500, so the same event comes twice.
    receiver.answer({ status: 500 });
    const checkout = await server.call('POST', '/api/billing/checkout', { key, body: { plan: 'starter' } });
    assert.equal(checkout.status, 201);
    const paid = await fetch(checkout.body.checkout_url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ outcome: 'success' }),
    });
    assert.equal(paid.status, 200);
    const [first, retry] = await receiver.waitFor(2, 10_000);
    const receive = standardReceiver(secret, Date.now);
    for (const delivery of [first!, retry!]) {
      // The spec's own signature is still there and still right.
      const spec = `sha256=${createHmac('sha256', secret).update(delivery.body).digest('hex')}`;
      assert.equal(delivery.headers['x-service-signature'], spec);
      assert.match(String(delivery.headers['webhook-id']), /^evt_[A-Za-z0-9_-]+$/);
      assert.equal(delivery.headers['webhook-id'], delivery.headers['x-service-event-id']);
      assert.match(String(delivery.headers['webhook-timestamp']), /^\d{10}$/);
      assert.match(String(delivery.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]{43}=$/);
      // The body is the spec's payload, nothing added.
      assert.deepEqual(Object.keys(JSON.parse(delivery.body)).sort(), [
        'amount',
        'currency',
        'customer_email',
        'event_type',
        'order_id',
        'plan',
        'timestamp',
      ]);
    }
    assert.equal(first!.headers['webhook-id'], retry!.headers['webhook-id'], 'one id for every attempt');
    assert.equal(first!.body, retry!.body);
    assert.equal(receive(first!.headers, first!.body), 'accepted');
    assert.equal(receive(retry!.headers, retry!.body), 'duplicate');

    // Tampering with any signed part is caught.
    const other = standardReceiver(secret, Date.now);
    assert.equal(other(first!.headers, first!.body.replace('starter', 'pro')), 'forged');
    assert.equal(other({ ...first!.headers, 'webhook-id': 'evt_other' }, first!.body), 'forged');
    const later = String(Number(first!.headers['webhook-timestamp']) + 1);
    assert.equal(other({ ...first!.headers, 'webhook-timestamp': later }, first!.body), 'forged');
    // A delivery captured and replayed an hour later is refused, even by a receiver that has forgotten its id.
    const anHourLater = standardReceiver(secret, () => Date.now() + 3_600_000);
    assert.equal(anHourLater(first!.headers, first!.body), 'stale');
  });

  it('docs/webhooks.md tells receivers to deduplicate and to refuse stale deliveries on signed data', () => {
    const docs = readFileSync(new URL('../../docs/webhooks.md', import.meta.url), 'utf8');
    for (const needle of [
      'webhook-id',
      'webhook-timestamp',
      'webhook-signature',
      'X-Service-Signature',
      '5 minutes',
    ])
      assert.ok(docs.includes(needle), `docs/webhooks.md mentions ${needle}`);
    assert.doesNotMatch(docs, /Use `X-Service-Event-Id` to process each event once/);
    assert.match(docs, /\(`event_type`, `order_id`\)/);
  });
});
