import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startFakeAnthropic } from '../src/providers/anthropic/fake-anthropic.ts';
import type { FakeUpstream } from '../src/providers/fake-upstream.ts';
import { startFakeOpenAI } from '../src/providers/openai/fake-openai.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startGatewayProcess } from './helpers/process.ts';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from './helpers/otlp-receiver.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';
import { until } from './helpers/until.ts';

/**
 * Traces by OTLP/HTTP to a receiver of the test's own, in both encodings: a span per request on every door, a child
 * span per upstream attempt, the GenAI attributes, a client's traceparent continued and sent upstream, and never a
 * prompt's or an answer's text, even with the content-capture variable set.
 */
const PROMPT = 'PROMPT-TEXT-never-traced-7f3a';
const ANSWER = 'ANSWER-TEXT-never-traced-9c1e';
const SERVER_KIND = 2;
const CLIENT_KIND = 3;
const ERROR = 2;

for (const protocol of ['http/protobuf', 'http/json'] as const) {
  describe(`traces over OTLP ${protocol}`, () => {
    let opened: OpenedBackend;
    let server: TestServer;
    let receiver: OtlpReceiver;
    let openaiUp: FakeUpstream;
    let anthropicUp: FakeUpstream;
    let key: string;

    before(async () => {
      opened = await BACKENDS[0]!.open();
      [receiver, openaiUp, anthropicUp] = await Promise.all([
        startOtlpReceiver(),
        startFakeOpenAI(),
        startFakeAnthropic(),
      ]);
      server = await startTestServer({
        backend: opened,
        yaml: {
          providers: [
            { id: 'up', type: 'openai', base_url: openaiUp.url },
            { id: 'claude-east', type: 'anthropic', base_url: anthropicUp.url },
            { id: 'claude-west', type: 'anthropic', base_url: anthropicUp.url },
          ],
          models: {
            'model-a': {
              deployments: [
                { provider: 'claude-east', model: 'claude-test' },
                { provider: 'claude-west', model: 'claude-test' },
              ],
            },
            'model-b': { deployments: [{ provider: 'up', model: 'up-b' }] },
          },
          routing: { retry_base_ms: 1, retry_max_ms: 5 },
        },
        extra: {
          telemetryEnv: {
            OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
            OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
            OTEL_BSP_SCHEDULE_DELAY: '20',
            OTEL_SERVICE_NAME: 'tollgate-under-test',
            OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
            OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
          },
        },
      });
      ({ key } = await server.registerOn('pro'));
    });
    after(async () => {
      await server?.close();
      await Promise.all([receiver?.close(), openaiUp?.close(), anthropicUp?.close()]);
      await opened?.cleanup();
    });

    const post = (path: string, body: unknown, headers: Record<string, string> = {}, bearer = key) =>
      fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}`, ...headers },
        body: JSON.stringify(body),
      });
    const requestSpan = async (requestId: string): Promise<ReceivedSpan> => {
      await until(
        () => receiver.spans.some((span) => span.attributes['tollgate.request.id'] === requestId),
        `the span of ${requestId}`,
      );
      return receiver.spans.find((span) => span.attributes['tollgate.request.id'] === requestId)!;
    };
    const childrenOf = (parent: ReceivedSpan): ReceivedSpan[] =>
      receiver.spans
        .filter((span) => span.parentSpanId === parent.spanId)
        .sort((a, b) => Number(a.attributes['tollgate.retry']) - Number(b.attributes['tollgate.retry']));

    it('a streamed chat: one server span, one client span per attempt, GenAI attributes, traceparent upstream', async () => {
      openaiUp.script({ kind: 'ok', text: ANSWER });
      const answer = await post('/v1/chat/completions', {
        model: 'model-b',
        stream: true,
        max_tokens: 50,
        temperature: 0.25,
        messages: [{ role: 'user', content: PROMPT }],
      });
      assert.equal(answer.status, 200);
      assert.match(await answer.text(), new RegExp(ANSWER.slice(0, 6)));
      const span = await requestSpan(answer.headers.get('x-request-id')!);
      await until(() => childrenOf(span).length === 1, 'the attempt span');
      assert.equal(span.kind, SERVER_KIND);
      assert.equal(span.name, 'chat model-b');
      assert.equal(span.parentSpanId, '');
      assert.equal(span.resource['service.name'], 'tollgate-under-test');
      assert.equal(span.resource['deployment.environment.name'], 'test');
      const a = span.attributes;
      assert.equal(a['gen_ai.operation.name'], 'chat');
      assert.equal(a['gen_ai.provider.name'], 'openai');
      assert.equal(a['gen_ai.request.model'], 'model-b');
      assert.equal(a['gen_ai.response.model'], 'up-b');
      assert.equal(a['gen_ai.request.max_tokens'], 50);
      assert.equal(a['gen_ai.request.temperature'], 0.25);
      assert.ok(Number(a['gen_ai.usage.input_tokens']) > 0);
      assert.ok(Number(a['gen_ai.usage.output_tokens']) > 0);
      assert.deepEqual(a['gen_ai.response.finish_reasons'], ['stop']);
      assert.equal(typeof a['gen_ai.response.id'], 'string');
      assert.equal(a['tollgate.door'], '/v1/chat/completions');
      assert.match(String(a['tollgate.account.id']), /^acct_/);
      assert.match(String(a['tollgate.key.id']), /^key_/);
      assert.equal(a['tollgate.deployment'], 'up/up-b');
      assert.equal(a['tollgate.status'], 'ok');
      assert.ok(Number(a['tollgate.cost.usd']) > 0);
      assert.ok(Number(a['tollgate.time_to_first_token_ms']) > 0);
      assert.ok(Number(a['tollgate.admission_ms']) >= 0);
      assert.ok(Number(a['tollgate.hold_ms']) >= 0);
      const [attempt] = childrenOf(span);
      assert.equal(attempt!.kind, CLIENT_KIND);
      assert.equal(attempt!.traceId, span.traceId);
      assert.equal(attempt!.attributes['tollgate.retry'], 0);
      assert.equal(attempt!.attributes['gen_ai.provider.name'], 'openai');
      assert.equal(attempt!.attributes['gen_ai.usage.output_tokens'], a['gen_ai.usage.output_tokens']);
      const sent = openaiUp.received.at(-1)!.headers['traceparent'];
      assert.equal(sent, `00-${span.traceId}-${attempt!.spanId}-01`);
    });

    it('a Messages call retried on the second deployment: two attempt spans, the first failed', async () => {
      anthropicUp.script({ kind: 'status', status: 500, message: 'down' }, { kind: 'ok', text: ANSWER });
      const answer = await post(
        '/v1/messages',
        { model: 'model-a', max_tokens: 64, messages: [{ role: 'user', content: PROMPT }] },
        { 'anthropic-version': '2023-06-01' },
      );
      assert.equal(answer.status, 200);
      const span = await requestSpan(answer.headers.get('request-id') ?? answer.headers.get('x-request-id')!);
      await until(() => childrenOf(span).length === 2, 'both attempt spans');
      const [first, second] = childrenOf(span);
      assert.equal(span.attributes['tollgate.door'], '/v1/messages');
      assert.equal(span.attributes['gen_ai.provider.name'], 'anthropic');
      assert.equal(span.attributes['tollgate.attempts'], 2);
      assert.equal(first!.statusCode, ERROR);
      assert.equal(first!.attributes['error.type'], '500');
      assert.equal(second!.attributes['tollgate.retry'], 1);
      assert.notEqual(second!.statusCode, ERROR);
      assert.notEqual(first!.attributes['tollgate.deployment'], second!.attributes['tollgate.deployment']);
      assert.equal(span.attributes['tollgate.deployment'], second!.attributes['tollgate.deployment']);
      for (const attempt of [first!, second!]) {
        assert.equal(attempt.traceId, span.traceId);
        assert.equal(attempt.kind, CLIENT_KIND);
      }
      const sent = anthropicUp.received.slice(-2).map((received) => received.headers['traceparent']);
      assert.deepEqual(
        sent,
        [first, second].map((attempt) => `00-${span.traceId}-${attempt!.spanId}-01`),
      );
    });

    it('a Responses call: its own span, with the door and the usage', async () => {
      openaiUp.script({ kind: 'ok', text: ANSWER });
      const answer = await post('/v1/responses', { model: 'model-b', input: PROMPT, max_output_tokens: 40 });
      assert.equal(answer.status, 200);
      const span = await requestSpan(answer.headers.get('x-request-id')!);
      assert.equal(span.kind, SERVER_KIND);
      assert.equal(span.attributes['tollgate.door'], '/v1/responses');
      assert.equal(span.attributes['gen_ai.request.model'], 'model-b');
      assert.equal(span.attributes['gen_ai.request.max_tokens'], 40);
      assert.ok(Number(span.attributes['gen_ai.usage.output_tokens']) > 0);
      await until(() => childrenOf(span).length === 1, 'the attempt span');
    });

    it('a 429 refusal: its span carries the error code and has no attempt', async () => {
      const { key: limited, accountId } = await server.registerOn('pro');
      const set = await server.call('PUT', `/api/admin/accounts/${accountId}/limits`, {
        key: ADMIN_KEY,
        body: { rpm: 1 },
      });
      assert.equal(set.status, 200);
      const body = { model: 'model-b', messages: [{ role: 'user', content: PROMPT }] };
      assert.equal((await post('/v1/chat/completions', body, {}, limited)).status, 200);
      const refused = await post('/v1/chat/completions', body, {}, limited);
      assert.equal(refused.status, 429);
      const span = await requestSpan(refused.headers.get('x-request-id')!);
      assert.equal(span.statusCode, ERROR);
      assert.equal(span.attributes['tollgate.error.code'], 'rate_limit_exceeded');
      assert.equal(span.attributes['http.response.status_code'], 429);
      assert.equal(span.attributes['gen_ai.request.model'], 'model-b');
      assert.equal(childrenOf(span).length, 0);
    });

    it("a client's traceparent continues its trace, into the upstream request", async () => {
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      const parent = '00f067aa0ba902b7';
      const answer = await post(
        '/v1/chat/completions',
        { model: 'model-b', messages: [{ role: 'user', content: PROMPT }] },
        { traceparent: `00-${traceId}-${parent}-01` },
      );
      assert.equal(answer.status, 200);
      const span = await requestSpan(answer.headers.get('x-request-id')!);
      assert.equal(span.traceId, traceId);
      assert.equal(span.parentSpanId, parent);
      await until(() => childrenOf(span).length === 1, 'the attempt span');
      const sent = String(openaiUp.received.at(-1)!.headers['traceparent']);
      assert.equal(sent, `00-${traceId}-${childrenOf(span)[0]!.spanId}-01`);
    });

    it('no prompt or answer text in any exported byte', async () => {
      assert.ok(receiver.bodies.length > 0);
      assert.ok(
        receiver.contentTypes.every((type) => type.includes(protocol === 'http/json' ? 'json' : 'protobuf')),
      );
      for (const body of receiver.bodies) {
        assert.equal(body.includes(PROMPT), false);
        assert.equal(body.includes(ANSWER), false);
      }
    });
  });
}

describe('traces to a collector that never answers', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let upstream: FakeUpstream;
  let hanging: Server;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    upstream = await startFakeOpenAI();
    // Takes every export and never answers it.
    hanging = createServer(() => {});
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    server = await startTestServer({
      backend: opened,
      yaml: {
        providers: [{ id: 'up', type: 'openai', base_url: upstream.url }],
        models: { 'model-b': { deployments: [{ provider: 'up', model: 'up-b' }] } },
      },
      extra: {
        telemetryEnv: {
          OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`,
          OTEL_BSP_MAX_QUEUE_SIZE: '4',
          OTEL_BSP_SCHEDULE_DELAY: '10',
          OTEL_EXPORTER_OTLP_TIMEOUT: '60000',
        },
      },
    });
  });
  after(async () => {
    hanging?.closeAllConnections();
    hanging?.close();
    await server?.close();
    await upstream?.close();
    await opened?.cleanup();
  });

  it('requests are answered while the export queue is full: spans are dropped, nothing waits', async () => {
    const { key } = await server.registerOn('pro');
    const statuses: number[] = [];
    // Many more spans than the queue holds, while the first export hangs.
    for (let i = 0; i < 40; i++) {
      const answer = await server.call('POST', '/v1/chat/completions', {
        key,
        body: { model: 'model-b', stream: i % 2 === 0, messages: [{ role: 'user', content: 'hi' }] },
      });
      await answer.body;
      statuses.push(answer.status);
    }
    assert.deepEqual(new Set(statuses), new Set([200]));
  });
});

describe('traces from a gateway process started as npm start starts it', () => {
  let receiver: OtlpReceiver;
  let dir: string;

  before(async () => {
    receiver = await startOtlpReceiver();
    dir = mkdtempSync(join(tmpdir(), 'tollgate-traces-'));
  });
  after(async () => {
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads the OTEL_* variables of its environment and exports a refused request’s span', async () => {
    const gateway = await startGatewayProcess({
      DATABASE_URL: `sqlite:${join(dir, 'tollgate.db')}`,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '20',
      OTEL_SERVICE_NAME: 'tollgate-process',
    });
    try {
      const answer = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer tg-not-a-key' },
        body: JSON.stringify({ model: 'any', messages: [{ role: 'user', content: PROMPT }] }),
      });
      assert.equal(answer.status, 401);
      const requestId = answer.headers.get('x-request-id');
      await until(
        () => receiver.spans.some((span) => span.attributes['tollgate.request.id'] === requestId),
        'the refused request’s span',
      );
      const span = receiver.spans.find((s) => s.attributes['tollgate.request.id'] === requestId)!;
      assert.equal(span.resource['service.name'], 'tollgate-process');
      assert.equal(span.attributes['http.response.status_code'], 401);
      assert.equal(span.statusCode, ERROR);
    } finally {
      gateway.child.kill('SIGTERM');
      await gateway.exited;
    }
  });

  it('refuses to start with a protocol it cannot send, naming the variable', async () => {
    await assert.rejects(
      startGatewayProcess({
        DATABASE_URL: `sqlite:${join(dir, 'refused.db')}`,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      }),
      /configuration error: OTEL_EXPORTER_OTLP_PROTOCOL/,
    );
  });
});
