import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

// The read routes the dashboard added to /api: recent requests, daily usage by model, the webhook event log.
for (const backend of BACKENDS) {
  const skip = await backend.unavailable();
  describe(`the dashboard's read routes on ${backend.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let server: TestServer;
    let receiver: Receiver;
    before(async () => {
      opened = await backend.open();
      receiver = await startReceiver();
      server = await startTestServer({ backend: opened });
    });
    after(async () => {
      await server?.close();
      await receiver?.close();
      await opened?.cleanup();
    });

    it('recent requests and daily usage by model hold only the account’s own requests', async () => {
      const mine = await server.register();
      const other = await server.register();
      const ids: string[] = [];
      for (const [key, model] of [
        [mine.key, 'model-b'],
        [mine.key, 'model-c'],
        [other.key, 'model-b'],
      ] as const) {
        const response = await server.call('POST', '/v1/chat/completions', {
          key,
          body: { model, messages: [{ role: 'user', content: 'hi' }] },
        });
        assert.equal(response.status, 200);
        ids.push(response.headers.get('x-request-id') ?? '');
      }
      await server.services.settlements.flush();
      const recent = await server.call('GET', '/api/usage/recent?limit=10', { key: mine.key });
      assert.equal(recent.status, 200);
      assert.deepEqual(recent.body.data.map((r: any) => r.request_id).sort(), ids.slice(0, 2).sort());
      const first = recent.body.data.find((r: any) => r.request_id === ids[0]);
      assert.equal(first.model, 'model-b');
      assert.equal(first.status, 'ok');
      assert.equal(first.total_tokens, first.prompt_tokens + first.completion_tokens);
      assert.ok(first.cost_usd > 0 && first.latency_ms >= 0);
      assert.equal(
        (await server.call('GET', '/api/usage/recent?limit=1', { key: mine.key })).body.data.length,
        1,
      );
      assert.equal((await server.call('GET', '/api/usage/recent?limit=0', { key: mine.key })).status, 400);
      const daily = await server.call('GET', '/api/usage/daily-by-model', { key: mine.key });
      assert.equal(daily.status, 200);
      assert.deepEqual(
        daily.body.data.map((r: any) => [r.model, r.requests]),
        [
          ['model-b', 1],
          ['model-c', 1],
        ],
      );
    });

    it('the webhook event log shows each event with its state and last answer', async () => {
      const { key } = await server.register();
      assert.deepEqual((await server.call('GET', '/api/webhooks/events', { key })).body.data, []);
      await server.call('PUT', '/api/webhooks/endpoint', { key, body: { url: receiver.url } });
      assert.equal((await server.call('POST', '/api/webhooks/test', { key })).status, 202);
      await receiver.waitFor(1);
      let event: any;
      for (let i = 0; i < 50; i++) {
        event = (await server.call('GET', '/api/webhooks/events', { key })).body.data[0];
        if (event?.last_status_code === 200 && event.status !== 'pending') break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(event.event_type, 'webhook.test');
      assert.equal(event.last_status_code, 200);
      assert.equal(event.attempts, 1);
      assert.equal(event.next_attempt_at, null);
    });
  });
}
