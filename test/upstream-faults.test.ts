import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startFakeOpenAI } from '../src/providers/openai/fake-openai.ts';
import { startFakeAnthropic } from '../src/providers/anthropic/fake-anthropic.ts';
import type { FakeUpstream } from '../src/providers/fake-upstream.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';

const UPSTREAM_SECRET = 'sk-fake-upstream-secret-value';

describe('routing, retries and provider adapters against fake upstreams', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let primary: FakeUpstream;
  let secondary: FakeUpstream;
  let claude: FakeUpstream;
  let key: string;
  let otherKey: string;
  let client: OpenAI;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    [primary, secondary, claude] = await Promise.all([
      startFakeOpenAI(),
      startFakeOpenAI(),
      startFakeAnthropic(),
    ]);
    server = await startTestServer({
      backend: opened,
      env: { FAKE_OPENAI_KEY: UPSTREAM_SECRET, FAKE_ANTHROPIC_KEY: 'ak-fake' },
      yaml: {
        providers: [
          { id: 'primary', type: 'openai', base_url: primary.url, api_key_env: 'FAKE_OPENAI_KEY' },
          { id: 'secondary', type: 'openai', base_url: secondary.url },
          { id: 'claude', type: 'anthropic', base_url: claude.url, api_key_env: 'FAKE_ANTHROPIC_KEY' },
        ],
        models: {
          'model-a': { deployments: [{ provider: 'claude', model: 'claude-test' }] },
          'model-b': { deployments: [{ provider: 'primary', model: 'up-b' }] },
          'model-c': { deployments: [{ provider: 'primary', model: 'up-c' }] },
          'model-d': { deployments: [{ provider: 'primary', model: 'up-d' }], fallbacks: ['model-f'] },
          'model-e': { deployments: [{ provider: 'primary', model: 'up-e' }] },
          'model-f': { deployments: [{ provider: 'secondary', model: 'up-f' }] },
        },
        timeouts: { connect_ms: 500, first_byte_ms: 400, idle_stream_ms: 400 },
        routing: {
          max_attempts: 3,
          retry_base_ms: 10,
          retry_max_ms: 1500,
          breaker_failure_threshold: 3,
          breaker_cooldown_ms: 60_000,
        },
      },
    });
    const registered = await server.registerOn('pro');
    key = registered.key;
    otherKey = (await server.registerOn('pro')).key;
    client = new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 });
  });
  after(async () => {
    await server?.close();
    await Promise.all([primary?.close(), secondary?.close(), claude?.close()]);
    await opened?.cleanup();
  });

  const ask = (model: string, extra: Record<string, unknown> = {}, as = key) =>
    server.call('POST', '/v1/chat/completions', {
      key: as,
      body: { model, messages: [{ role: 'user', content: 'hi' }], ...extra },
    });

  const recordOf = async (requestId: string): Promise<any> => {
    await server.services.settlements.flush();
    return opened.db.get('SELECT * FROM usage_records WHERE request_id = $1', [requestId]);
  };

  it('the OpenAI adapter passes unknown fields through, swaps the model and sends the upstream key', async () => {
    const before = primary.received.length;
    const response = await ask('model-b', { seed: 7, user: 'end-user-1', logit_bias: { '50256': -100 } });
    assert.equal(response.status, 200);
    assert.equal(response.body.model, 'model-b');
    assert.equal(response.body.choices[0].message.content, 'Hello from the fake upstream.');
    assert.deepEqual(response.body.usage, { prompt_tokens: 11, completion_tokens: 6, total_tokens: 17 });
    const sent = primary.received[before]!;
    assert.equal(sent.path, '/v1/chat/completions');
    assert.equal(sent.body.model, 'up-b');
    assert.equal(sent.body.seed, 7);
    assert.equal(sent.body.temperature, 0.7, 'the spec’s default when the request sets none');
    assert.equal(sent.body.user, 'end-user-1');
    assert.deepEqual(sent.body.logit_bias, { '50256': -100 });
    assert.equal(sent.headers.authorization, `Bearer ${UPSTREAM_SECRET}`);
  });

  it('a stream asks the upstream for usage and bills it, even when the client did not ask for it', async () => {
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'model-b', stream: true, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    assert.equal(text, 'Hello from the fake upstream.');
    assert.deepEqual(primary.received.at(-1)!.body.stream_options, { include_usage: true });
    const record = await recordOf(response.headers.get('x-request-id')!);
    assert.equal(record.status, 'ok');
    assert.equal(record.prompt_tokens, 11);
    assert.equal(record.completion_tokens, 6);
    assert.equal(record.estimated, 0);
  });

  for (const [flavour, model] of [
    ['OpenAI', 'model-b'],
    ['Anthropic', 'model-a'],
  ] as const) {
    it(`a finished ${flavour} stream gives its upstream connection back to the pool`, async () => {
      const upstream = flavour === 'OpenAI' ? primary : claude;
      const before = upstream.connections;
      for (let i = 0; i < 3; i++) {
        const stream = await client.chat.completions.create({
          model,
          stream: true,
          messages: [{ role: 'user', content: `reuse ${i}` }],
        });
        for await (const chunk of stream) void chunk;
        // The fake ends each body a moment after its final event; the connection is free once it has.
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
      // At most one new connection (if none was idle in the pool); a stream that destroyed its
      // connection after the final event would cost one per stream.
      assert.ok(
        upstream.connections - before <= 1,
        `three streams opened ${upstream.connections - before} connections`,
      );
    });
  }

  const retried: [string, Parameters<FakeUpstream['script']>[0]][] = [
    ['a 500', { kind: 'status', status: 500 }],
    ['a connection reset', { kind: 'reset' }],
    ['malformed JSON', { kind: 'malformed' }],
    ['a first-byte timeout', { kind: 'hang' }],
    ['a 503', { kind: 'status', status: 503 }],
  ];
  for (const [what, behaviour] of retried) {
    it(`${what} is retried and the request succeeds`, async () => {
      const before = primary.received.length;
      primary.script(behaviour);
      const response = await ask('model-b');
      assert.equal(response.status, 200, JSON.stringify(response.body));
      assert.equal(primary.received.length - before, 2);
    });
  }

  it('a 429 with Retry-After is honoured before the retry', async () => {
    primary.script({ kind: 'status', status: 429, headers: { 'retry-after': '1' } });
    const started = Date.now();
    const response = await ask('model-b');
    assert.equal(response.status, 200);
    assert.ok(Date.now() - started >= 950, `retried after ${Date.now() - started} ms`);
  });

  it('an upstream 400 is the client’s fault: not retried, answered 400', async () => {
    const before = primary.received.length;
    primary.script({ kind: 'status', status: 400, message: 'max_tokens is too large for this model' });
    const response = await ask('model-b');
    assert.equal(response.status, 400);
    assert.equal(response.body.error.code, 'invalid_request');
    assert.match(response.body.error.message, /max_tokens is too large/);
    assert.equal(primary.received.length - before, 1);
  });

  it('when every attempt fails: 502 provider_error, with no upstream address or secret in the message', async () => {
    primary.script(
      { kind: 'status', status: 500, message: `boom at ${primary.url} with ${UPSTREAM_SECRET}` },
      { kind: 'status', status: 502 },
      { kind: 'status', status: 500 },
    );
    const response = await ask('model-c');
    assert.equal(response.status, 502);
    assert.equal(response.body.error.code, 'provider_error');
    assert.equal(response.body.error.type, 'api_error');
    assert.ok(!response.body.error.message.includes('127.0.0.1'));
    assert.ok(!response.body.error.message.includes(UPSTREAM_SECRET));
    const record = await recordOf(response.headers.get('x-request-id')!);
    assert.equal(record.status, 'error');
    assert.equal(record.cost_micros, 0, 'a failed request costs nothing');
  });

  it('a model whose deployments fail falls back to its fallback model', async () => {
    const before = secondary.received.length;
    primary.script({ kind: 'status', status: 500 });
    const response = await ask('model-d');
    assert.equal(response.status, 200);
    assert.equal(response.body.model, 'model-d');
    assert.equal(secondary.received.length - before, 1);
    assert.equal(secondary.received.at(-1)!.body.model, 'up-f');
    const record = await recordOf(response.headers.get('x-request-id')!);
    assert.equal(record.deployment, 'secondary/up-f');
  });

  it('the circuit opens after repeated failures: requests skip the deployment and /health shows it', async () => {
    primary.script(
      { kind: 'status', status: 500 },
      { kind: 'status', status: 500 },
      { kind: 'status', status: 500 },
      { kind: 'status', status: 500 },
    );
    assert.equal((await ask('model-e')).status, 502);
    const closed = await server.call('GET', '/health', { key: ADMIN_KEY });
    assert.equal(
      closed.body.deployments.find((d: any) => d.model === 'model-e').state,
      'closed',
      'one account’s three failures count two of three: it alone never opens a circuit others share',
    );
    assert.equal((await ask('model-e', {}, otherKey)).status, 502, 'a second account’s failure opens it');
    const before = primary.received.length;
    const skipped = await ask('model-e');
    assert.equal(skipped.status, 502);
    assert.equal(primary.received.length, before, 'an open circuit sends nothing upstream');
    const health = await server.call('GET', '/health', { key: ADMIN_KEY });
    const state = health.body.deployments.find((d: any) => d.model === 'model-e');
    assert.equal(state.state, 'open');
    assert.equal(state.error_rate, 1);
  });

  it('a stream cut in the middle ends with one error event, and what was generated is billed', async () => {
    primary.script({ kind: 'cut', after: 3 });
    const response = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'model-b', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(response.status, 200);
    const events = (await response.text()).split('\n\n').filter(Boolean);
    const last = JSON.parse(events.at(-1)!.replace(/^data: /, ''));
    assert.equal(last.error.code, 'provider_error');
    assert.ok(!events.includes('data: [DONE]'));
    const record = await recordOf(response.headers.get('x-request-id')!);
    assert.equal(record.status, 'error');
    assert.equal(record.estimated, 1);
    assert.ok(record.completion_tokens >= 3, `billed ${record.completion_tokens}`);
  });

  it('an idle stream times out instead of hanging', async () => {
    primary.script({ kind: 'slow', intervalMs: 1000, chunks: 3 });
    const started = Date.now();
    const response = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'model-b', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(response.status, 200);
    const body = await response.text();
    assert.match(body, /^data: .*"content":" w0"/m, 'the first chunk was relayed');
    assert.match(body, /data: \{"error":\{"code":"provider_error"/);
    assert.ok(Date.now() - started < 2500);
  });

  it('a client that disconnects aborts the upstream request at once', async () => {
    primary.script({ kind: 'slow', intervalMs: 100, chunks: 50 });
    const abortedBefore = primary.aborted;
    const controller = new AbortController();
    const response = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      signal: controller.signal,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'model-b', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const reader = response.body!.getReader();
    await reader.read();
    await reader.read();
    controller.abort();
    for (let i = 0; i < 40 && primary.aborted === abortedBefore; i++)
      await new Promise((resolve) => setTimeout(resolve, 25));
    assert.equal(primary.aborted, abortedBefore + 1, 'the upstream connection was closed');
    const record = await recordOf(response.headers.get('x-request-id')!);
    assert.equal(record?.status, 'cancelled');
  });

  it('a client that leaves before a whole answer arrives aborts the upstream request too', async () => {
    primary.script({ kind: 'hang' });
    const abortedBefore = primary.aborted;
    const receivedBefore = primary.received.length;
    // node:http rather than fetch: destroying the request closes its one connection, nothing else opens.
    const { port } = new URL(server.url);
    const body = JSON.stringify({ model: 'model-b', messages: [{ role: 'user', content: 'hi' }] });
    const request = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/v1/chat/completions',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    });
    request.on('error', () => {});
    request.end(body);
    for (let i = 0; i < 40 && primary.received.length === receivedBefore; i++)
      await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal(primary.received.length, receivedBefore + 1, 'the request reached the upstream');
    request.destroy();
    for (let i = 0; i < 40 && primary.aborted === abortedBefore; i++)
      await new Promise((resolve) => setTimeout(resolve, 5));
    // Well before the 400 ms first-byte timeout: the close came from the client leaving, not from a timeout.
    assert.equal(primary.aborted, abortedBefore + 1, 'the upstream connection was closed');
    await server.services.settlements.flush();
    const record = await opened.db.get<{ status: string }>(
      "SELECT status FROM usage_records WHERE model = 'model-b' ORDER BY created_at DESC LIMIT 1",
    );
    assert.equal(record?.status, 'cancelled');
    assert.equal(primary.received.length, receivedBefore + 1, 'a cancelled request is not retried');
  });

  it('the Anthropic adapter converts the request: system prompt, tool_use and tool_result blocks, headers', async () => {
    const before = claude.received.length;
    const completion = await client.chat.completions.create({
      model: 'model-a',
      max_tokens: 50,
      temperature: 1.6,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: 'cold' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'weather',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
          },
        },
      ],
      tool_choice: 'required',
    });
    assert.equal(completion.choices[0]?.message.content, 'Hello from the fake upstream.');
    assert.equal(completion.choices[0]?.finish_reason, 'stop');
    assert.deepEqual(completion.usage, { prompt_tokens: 21, completion_tokens: 6, total_tokens: 27 });
    const sent = claude.received[before]!;
    assert.equal(sent.path, '/v1/messages');
    assert.equal(sent.headers['x-api-key'], 'ak-fake');
    assert.equal(sent.headers['anthropic-version'], '2023-06-01');
    assert.equal(sent.body.system, 'Be brief.');
    assert.equal(sent.body.max_tokens, 50);
    assert.equal(sent.body.temperature, 1);
    assert.deepEqual(sent.body.tool_choice, { type: 'any' });
    assert.deepEqual(sent.body.tools[0], {
      name: 'weather',
      input_schema: { type: 'object', properties: { city: { type: 'string' } } },
    });
    assert.deepEqual(sent.body.messages, [
      { role: 'user', content: [{ type: 'text', text: 'Weather?' }] },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Oslo' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'cold' }] },
    ]);
  });

  it('the Anthropic adapter maps tool_use answers to tool_calls, streamed and not', async () => {
    claude.script({ kind: 'ok', toolCall: { name: 'weather', arguments: '{"city":"Rome"}' } });
    const whole = await client.chat.completions.create({
      model: 'model-a',
      messages: [{ role: 'user', content: 'x' }],
    });
    assert.equal(whole.choices[0]?.finish_reason, 'tool_calls');
    assert.deepEqual(whole.choices[0]?.message.tool_calls, [
      { id: 'toolu_fake1', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
    ]);
    assert.equal(
      claude.received.at(-1)!.body.max_tokens,
      4096,
      'the model default when the request sets none',
    );

    claude.script({ kind: 'ok', toolCall: { name: 'weather', arguments: '{"city":"Rome"}' } });
    const stream = await client.chat.completions.create({
      model: 'model-a',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'x' }],
    });
    let args = '';
    let finish: string | null | undefined;
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      args += chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    assert.equal(args, '{"city":"Rome"}');
    assert.equal(finish, 'tool_calls');
    assert.deepEqual(usage, { prompt_tokens: 21, completion_tokens: 9, total_tokens: 30 });
  });

  it('the Anthropic adapter streams text events as chunks and retries a 529 overloaded', async () => {
    const before = claude.received.length;
    claude.script({ kind: 'status', status: 529, message: 'Overloaded' });
    const stream = await client.chat.completions.create({
      model: 'model-a',
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    });
    const pieces: string[] = [];
    for await (const chunk of stream)
      if (chunk.choices[0]?.delta.content) pieces.push(chunk.choices[0].delta.content);
    assert.deepEqual(
      pieces,
      ['Hello', ' from', ' the', ' fake', ' upstream', '.'],
      'one chunk per upstream delta, never re-chunked',
    );
    assert.equal(claude.received.length - before, 2);
  });
});
