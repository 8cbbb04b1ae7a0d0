import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, type OpenedBackend } from '../helpers/backends.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

describe('deliveries an account asks for by hand are throttled per account', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let receiver: Receiver;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    receiver = await startReceiver();
    server = await startTestServer({ backend: opened, extra: { webhookRetryDelaysMs: [] } });
  });
  after(async () => {
    await server?.close();
    await receiver?.close();
    await opened?.cleanup();
  });

  const withEndpoint = async () => {
    const { key } = await server.register();
    const endpoint = await server.call('PUT', '/api/webhooks/endpoint', { key, body: { url: receiver.url } });
    assert.equal(endpoint.status, 200);
    return key;
  };

  const expectThrottled = (answer: { status: number; body: any; headers: Headers }, what: string) => {
    assert.equal(answer.status, 429, what);
    assert.deepEqual(Object.keys(answer.body), ['error']);
    assert.equal(answer.body.error.code, 'rate_limit_exceeded');
    assert.equal(answer.body.error.type, 'rate_limit_error');
    const seconds = Number(answer.headers.get('retry-after'));
    const ms = Number(answer.headers.get('retry-after-ms'));
    assert.ok(seconds >= 1 && seconds <= 60, `Retry-After ${seconds}`);
    assert.ok(ms > 0 && ms <= 60_000, `Retry-After-Ms ${ms}`);
  };

  it('POST /api/webhooks/test: 5 a minute, then 429 with Retry-After; another account is not affected', async () => {
    const key = await withEndpoint();
    for (let i = 0; i < 5; i++)
      assert.equal(
        (await server.call('POST', '/api/webhooks/test', { key })).status,
        202,
        `test event ${i + 1}`,
      );
    expectThrottled(await server.call('POST', '/api/webhooks/test', { key }), 'the sixth test event');
    expectThrottled(await server.call('POST', '/api/webhooks/test', { key }), 'and the seventh');
    const other = await withEndpoint();
    assert.equal((await server.call('POST', '/api/webhooks/test', { key: other })).status, 202);
  });

  it('redelivery: 30 a minute, then 429 with Retry-After', async () => {
    const key = await withEndpoint();
    assert.equal((await server.call('POST', '/api/webhooks/test', { key })).status, 202);
    let deliveries: any[] = [];
    for (let i = 0; i < 250 && deliveries.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      deliveries = (await server.call('GET', '/api/webhooks/deliveries', { key })).body.data;
    }
    const path = `/api/webhooks/deliveries/${deliveries[0].id}/redeliver`;
    for (let i = 0; i < 30; i++)
      assert.equal((await server.call('POST', path, { key })).status, 202, `redelivery ${i + 1}`);
    expectThrottled(await server.call('POST', path, { key }), 'the 31st redelivery');
  });
});
