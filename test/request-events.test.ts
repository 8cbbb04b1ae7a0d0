import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FakeUpstream } from '../src/providers/fake-upstream.ts';
import { startFakeOpenAI } from '../src/providers/openai/fake-openai.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { type Receiver, startReceiver } from './helpers/receiver.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';
import { until } from './helpers/until.ts';

/** Request events to an HTTP receiver: one per finished request, batched, retried, with no content in them. */
const PROMPT = 'PROMPT-TEXT-never-in-events-51d2';
const ANSWER = 'ANSWER-TEXT-never-in-events-a7b0';

describe('request events over HTTP', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let receiver: Receiver;
  let upstream: FakeUpstream;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    [receiver, upstream] = await Promise.all([startReceiver(), startFakeOpenAI()]);
    server = await startTestServer({
      backend: opened,
      yaml: {
        providers: [{ id: 'up', type: 'openai', base_url: upstream.url }],
        models: { 'model-b': { deployments: [{ provider: 'up', model: 'up-b' }] } },
      },
      extra: {
        telemetryEnv: {
          TOLLGATE_REQUEST_EVENTS: receiver.url,
          TOLLGATE_REQUEST_EVENTS_HEADERS: 'authorization=Bearer%20sink-token',
          TOLLGATE_REQUEST_EVENTS_INTERVAL_MS: '20',
        },
      },
    });
  });
  after(async () => {
    await server?.close();
    await Promise.all([receiver?.close(), upstream?.close()]);
    await opened?.cleanup();
  });

  it('sends each finished request’s usage record, retrying a failed batch, never its text', async () => {
    const { key, accountId, keyId } = await server.registerOn('pro');
    receiver.answer({ status: 503 });
    upstream.script({ kind: 'ok', text: ANSWER }, { kind: 'ok', text: ANSWER });
    const ids: string[] = [];
    for (const stream of [false, true]) {
      const answer = await server.call('POST', '/v1/chat/completions', {
        key,
        body: { model: 'model-b', stream, messages: [{ role: 'user', content: PROMPT }] },
      });
      assert.equal(answer.status, 200);
      ids.push(answer.headers.get('x-request-id')!);
    }
    // The first POST was answered 503: its events come again, with every later one.
    const eventsAfterFirst = (): any[] =>
      receiver.deliveries.slice(1).flatMap((delivery) => JSON.parse(delivery.body) as any[]);
    await until(
      () => ids.every((id) => eventsAfterFirst().some((event) => event.request_id === id)),
      'both requests’ events after the retry',
    );
    const deliveries = receiver.deliveries;
    const refused = JSON.parse(deliveries[0]!.body) as any[];
    assert.deepEqual(JSON.parse(deliveries[1]!.body).slice(0, refused.length), refused);
    const events = eventsAfterFirst();
    const first = events.find((event) => event.request_id === ids[0]);
    assert.ok(first, 'the first request’s event');
    assert.equal(first.type, 'request.finished');
    assert.equal(first.account_id, accountId);
    assert.equal(first.key_id, keyId);
    assert.equal(first.model, 'model-b');
    assert.equal(first.deployment, 'up/up-b');
    assert.equal(first.status, 'ok');
    assert.ok(first.prompt_tokens > 0 && first.completion_tokens > 0);
    assert.ok(first.cost_micros > 0);
    assert.equal(deliveries[1]!.headers['authorization'], 'Bearer sink-token');
    assert.equal(deliveries[1]!.headers['content-type'], 'application/json');
    for (const delivery of deliveries) {
      assert.equal(delivery.body.includes(PROMPT), false);
      assert.equal(delivery.body.includes(ANSWER), false);
    }
    const metrics = await fetch(`${server.url}/metrics`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    }).then((response) => response.text());
    assert.match(metrics, /tollgate_request_events_dropped_total\{reason="send_failed"\} 0/);
  });
});
