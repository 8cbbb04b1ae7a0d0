import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { costMicros } from '../src/billing/pricing.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startFakeOpenAI } from '../src/providers/openai/fake-openai.ts';
import { startFakeAnthropic } from '../src/providers/anthropic/fake-anthropic.ts';
import type { FakeUpstream } from '../src/providers/fake-upstream.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

/**
 * The Responses API and the Anthropic Messages API front doors, through the official SDKs on the real server,
 * each against three upstream adapters: the simulator (model-c), an OpenAI-compatible upstream (model-b) and an
 * Anthropic upstream (model-a), so every front door meets every upstream protocol.
 */
const UPSTREAMS = [
  { model: 'model-c', adapter: 'the simulator' },
  { model: 'model-b', adapter: 'an OpenAI upstream' },
  { model: 'model-a', adapter: 'an Anthropic upstream' },
] as const;

const WEATHER = {
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: {
    type: 'object' as const,
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
};

describe('front doors: /v1/responses and /v1/messages', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let openaiUp: FakeUpstream;
  let anthropicUp: FakeUpstream;
  let key: string;
  let openai: OpenAI;
  let anthropic: Anthropic;

  /** Scripts the fake upstream behind `model` (the simulator needs none) to call the weather tool. */
  const scriptToolCall = (model: string): void => {
    const call = { kind: 'ok' as const, toolCall: { name: 'get_weather', arguments: '{"city":"Paris"}' } };
    if (model === 'model-b') openaiUp.script(call);
    if (model === 'model-a') anthropicUp.script(call);
  };

  before(async () => {
    opened = await BACKENDS[0]!.open();
    [openaiUp, anthropicUp] = await Promise.all([startFakeOpenAI(), startFakeAnthropic()]);
    server = await startTestServer({
      backend: opened,
      yaml: {
        simulator: { chunk_interval_ms: 1 },
        providers: [
          { id: 'up', type: 'openai', base_url: openaiUp.url },
          { id: 'claude', type: 'anthropic', base_url: anthropicUp.url },
        ],
        models: {
          'model-a': { deployments: [{ provider: 'claude', model: 'claude-test' }] },
          'model-b': { deployments: [{ provider: 'up', model: 'up-b' }] },
        },
      },
    });
    ({ key } = await server.registerOn('pro'));
    openai = new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 });
    anthropic = new Anthropic({ apiKey: key, baseURL: server.url, maxRetries: 0 });
  });
  after(async () => {
    await server?.close();
    await Promise.all([openaiUp?.close(), anthropicUp?.close()]);
    await opened?.cleanup();
  });

  for (const { model, adapter } of UPSTREAMS) {
    describe(`through ${adapter} (${model})`, () => {
      it('responses.create: a plain answer with output_text and usage', async () => {
        const response = await openai.responses.create({
          model,
          instructions: 'Answer briefly.',
          input: 'Say hello',
          max_output_tokens: 200,
          temperature: 0.5,
        });
        assert.equal(response.object, 'response');
        assert.equal(response.status, 'completed');
        assert.equal(response.model, model);
        assert.match(response.id, /^resp_/);
        assert.ok(response.output_text.length > 0);
        assert.equal(response.output[0]?.type, 'message');
        const usage = response.usage!;
        assert.ok(usage.input_tokens > 0 && usage.output_tokens > 0);
        assert.equal(usage.total_tokens, usage.input_tokens + usage.output_tokens);
        assert.equal(response.instructions, 'Answer briefly.');
      });

      it('responses.create streamed: the documented events in order, numbered, ending in response.completed', async () => {
        const stream = await openai.responses.create({ model, input: 'Say hello', stream: true });
        const events = [];
        for await (const event of stream) events.push(event);
        const types = events.map((event) => event.type);
        const deltas = types.filter((type) => type === 'response.output_text.delta').length;
        assert.ok(deltas >= 1);
        assert.deepEqual(types, [
          'response.created',
          'response.in_progress',
          'response.output_item.added',
          'response.content_part.added',
          ...Array<string>(deltas).fill('response.output_text.delta'),
          'response.output_text.done',
          'response.content_part.done',
          'response.output_item.done',
          'response.completed',
        ]);
        assert.deepEqual(
          events.map((event) => event.sequence_number),
          events.map((_, index) => index),
        );
        const text = events
          .map((event) => (event.type === 'response.output_text.delta' ? event.delta : ''))
          .join('');
        const done = events.find((event) => event.type === 'response.output_text.done');
        assert.equal(done?.type === 'response.output_text.done' && done.text, text);
        const completed = events.at(-1);
        assert.ok(completed?.type === 'response.completed');
        assert.equal(completed.response.output_text ?? text, text);
        assert.ok((completed.response.usage?.output_tokens ?? 0) > 0);
        assert.equal(completed.response.model, model);
      });

      it('responses.create: a function call round trip (function_call, then function_call_output)', async () => {
        scriptToolCall(model);
        const tools = [{ type: 'function' as const, strict: true, ...WEATHER }];
        const first = await openai.responses.create({
          model,
          input: 'What is the weather in Paris?',
          tools,
          tool_choice: 'auto',
        });
        const call = first.output.find((item) => item.type === 'function_call');
        assert.ok(call?.type === 'function_call', 'the model called the tool');
        assert.equal(call.name, 'get_weather');
        assert.equal(typeof JSON.parse(call.arguments), 'object');
        const second = await openai.responses.create({
          model,
          input: [
            { role: 'user', content: 'What is the weather in Paris?' },
            call,
            { type: 'function_call_output', call_id: call.call_id, output: '{"celsius":21}' },
          ],
          tools,
        });
        assert.equal(second.status, 'completed');
        assert.ok(second.output_text.length > 0);
        if (model === 'model-b') {
          // The upstream got the round trip as chat messages: the assistant's call and the tool's answer.
          const messages = openaiUp.received.at(-1)!.body.messages;
          assert.deepEqual(
            messages.map((message: { role: string }) => message.role),
            ['user', 'assistant', 'tool'],
          );
          assert.equal(messages[1].tool_calls[0].id, call.call_id);
          assert.equal(messages[2].tool_call_id, call.call_id);
        }
      });

      it('responses.create streamed: a function call as output_item and function_call_arguments events', async () => {
        scriptToolCall(model);
        const stream = await openai.responses.create({
          model,
          input: 'What is the weather in Paris?',
          tools: [{ type: 'function', strict: true, ...WEATHER }],
          stream: true,
        });
        const events = [];
        for await (const event of stream) events.push(event);
        const added = events.find((event) => event.type === 'response.output_item.added');
        assert.ok(added?.type === 'response.output_item.added' && added.item.type === 'function_call');
        const args = events
          .map((event) => (event.type === 'response.function_call_arguments.delta' ? event.delta : ''))
          .join('');
        const done = events.find((event) => event.type === 'response.function_call_arguments.done');
        assert.ok(done?.type === 'response.function_call_arguments.done');
        assert.equal(done.arguments, args);
        assert.equal(typeof JSON.parse(args), 'object');
        const completed = events.at(-1);
        assert.ok(completed?.type === 'response.completed');
        const item = completed.response.output[0];
        assert.ok(item?.type === 'function_call' && item.arguments === args && item.name === 'get_weather');
      });

      it('messages.create: a plain answer with text content, stop_reason and usage', async () => {
        const message = await anthropic.messages.create({
          model,
          max_tokens: 200,
          system: 'Answer briefly.',
          messages: [{ role: 'user', content: 'Say hello' }],
        });
        assert.equal(message.type, 'message');
        assert.equal(message.role, 'assistant');
        assert.equal(message.model, model);
        assert.equal(message.stop_reason, 'end_turn');
        const block = message.content[0];
        assert.ok(block?.type === 'text' && block.text.length > 0);
        assert.ok(message.usage.input_tokens > 0 && message.usage.output_tokens > 0);
        assert.match(
          message._request_id ?? '',
          /^req_/,
          'Anthropic’s request-id header carries the request id',
        );
      });

      it('messages.create streamed: message_start … message_stop, read by the SDK into the same message', async () => {
        const stream = await anthropic.messages.create({
          model,
          max_tokens: 200,
          messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hello' }] }],
          stream: true,
        });
        const events = [];
        for await (const event of stream) events.push(event);
        const types = events.map((event) => event.type);
        const deltas = types.filter((type) => type === 'content_block_delta').length;
        assert.ok(deltas >= 1);
        assert.deepEqual(types, [
          'message_start',
          'content_block_start',
          ...Array<string>(deltas).fill('content_block_delta'),
          'content_block_stop',
          'message_delta',
          'message_stop',
        ]);
        const last = events.find((event) => event.type === 'message_delta');
        assert.ok(last?.type === 'message_delta');
        assert.equal(last.delta.stop_reason, 'end_turn');
        assert.ok(last.usage.output_tokens > 0);
        // The SDK's own accumulator reads the same events into a whole message.
        const final = await anthropic.messages
          .stream({ model, max_tokens: 200, messages: [{ role: 'user', content: 'Say hello' }] })
          .finalMessage();
        const block = final.content[0];
        assert.ok(block?.type === 'text' && block.text.length > 0);
      });

      it('messages.create: a tool-use round trip (tool_use, then tool_result), streamed and not', async () => {
        scriptToolCall(model);
        const tools = [
          { name: WEATHER.name, description: WEATHER.description, input_schema: WEATHER.parameters },
        ];
        const question = { role: 'user' as const, content: 'What is the weather in Paris?' };
        const first = await anthropic.messages.create({
          model,
          max_tokens: 200,
          messages: [question],
          tools,
          tool_choice: { type: 'auto' },
        });
        assert.equal(first.stop_reason, 'tool_use');
        const use = first.content.find((block) => block.type === 'tool_use');
        assert.ok(use?.type === 'tool_use');
        assert.equal(use.name, 'get_weather');
        assert.equal(typeof use.input, 'object');
        const second = await anthropic.messages.create({
          model,
          max_tokens: 200,
          messages: [
            question,
            { role: 'assistant', content: first.content },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '21 degrees' }] },
          ],
          tools,
        });
        assert.equal(second.stop_reason, 'end_turn');
        assert.ok(second.content[0]?.type === 'text');
        if (model === 'model-a') {
          // The Anthropic upstream got the round trip back as tool_use and tool_result blocks.
          const messages = anthropicUp.received.at(-1)!.body.messages;
          assert.equal(messages[1].content.at(-1).type, 'tool_use');
          assert.equal(messages[2].content[0].type, 'tool_result');
          assert.equal(messages[2].content[0].tool_use_id, use.id);
        }
        scriptToolCall(model);
        const streamed = await anthropic.messages
          .stream({ model, max_tokens: 200, messages: [question], tools, tool_choice: { type: 'any' } })
          .finalMessage();
        assert.equal(streamed.stop_reason, 'tool_use');
        const streamedUse = streamed.content.find((block) => block.type === 'tool_use');
        assert.ok(streamedUse?.type === 'tool_use');
        assert.deepEqual(streamedUse.input, use.input);
      });

      it('responses.create with text.format json_schema: a JSON answer of that schema, streamed and not', async () => {
        const answer = JSON.stringify({ city: 'Paris', celsius: 21 });
        const format = {
          type: 'json_schema' as const,
          name: 'weather',
          strict: true,
          schema: {
            type: 'object',
            properties: { city: { type: 'string' }, celsius: { type: 'number' } },
            required: ['city', 'celsius'],
            additionalProperties: false,
          },
        };
        for (const stream of [false, true]) {
          if (model === 'model-b') openaiUp.script({ kind: 'ok', text: answer });
          if (model === 'model-a')
            anthropicUp.script({ kind: 'ok', toolCall: { name: 'structured_answer', arguments: answer } });
          let text: string;
          if (stream) {
            const events = await openai.responses.create({
              model,
              input: 'The weather in Paris',
              text: { format },
              stream: true,
            });
            text = '';
            for await (const event of events)
              if (event.type === 'response.output_text.delta') text += event.delta;
          } else {
            const response = await openai.responses.create({
              model,
              input: 'The weather in Paris',
              text: { format },
            });
            assert.equal(response.status, 'completed');
            text = response.output_text;
          }
          const parsed = JSON.parse(text);
          assert.equal(typeof parsed.city, 'string', text);
          assert.equal(typeof parsed.celsius, 'number', text);
          assert.deepEqual(Object.keys(parsed).sort(), ['celsius', 'city']);
        }
      });

      it('messages.countTokens: the prompt as admission counts it', async () => {
        const counted = await anthropic.messages.countTokens({
          model,
          system: 'Answer briefly.',
          messages: [{ role: 'user', content: 'Say hello' }],
        });
        assert.ok(counted.input_tokens > 0);
        const longer = await anthropic.messages.countTokens({
          model,
          system: 'Answer briefly.',
          messages: [{ role: 'user', content: 'Say hello to everyone in the whole wide world, please' }],
        });
        assert.ok(longer.input_tokens > counted.input_tokens);
      });
    });
  }

  it('responses.create with text.format json_schema: the schema goes upstream as response_format', async () => {
    openaiUp.script({ kind: 'ok', text: '{"city":"Paris","celsius":21}' });
    const response = await openai.responses.create({
      model: 'model-b',
      input: 'The weather in Paris as JSON',
      text: {
        format: {
          type: 'json_schema',
          name: 'weather',
          strict: true,
          schema: {
            type: 'object',
            properties: { city: { type: 'string' }, celsius: { type: 'number' } },
            required: ['city', 'celsius'],
            additionalProperties: false,
          },
        },
      },
    });
    assert.deepEqual(JSON.parse(response.output_text), { city: 'Paris', celsius: 21 });
    const sent = openaiUp.received.at(-1)!.body;
    assert.equal(sent.response_format.type, 'json_schema');
    assert.equal(sent.response_format.json_schema.name, 'weather');
    assert.equal(sent.response_format.json_schema.strict, true);
    assert.deepEqual(sent.response_format.json_schema.schema.required, ['city', 'celsius']);
    assert.equal(response.text?.format?.type, 'json_schema');
    openaiUp.script({ kind: 'ok', text: '{"ok":true}' });
    await openai.responses.create({
      model: 'model-b',
      input: 'JSON',
      text: { format: { type: 'json_object' } },
    });
    assert.deepEqual(openaiUp.received.at(-1)!.body.response_format, { type: 'json_object' });
  });

  it('a Responses and a Messages request are charged and recorded exactly like a chat completion', async () => {
    const balance = async (): Promise<number> => {
      await server.services.settlements.flush();
      return Math.round((await server.call('GET', '/api/account', { key })).body.balance_usd * 1e6);
    };
    const record = async (requestId: string | null): Promise<any> => {
      await server.services.settlements.flush();
      return opened.db.get<any>('SELECT * FROM usage_records WHERE request_id = $1', [requestId]);
    };
    const price = (prompt: number, completion: number): number =>
      costMicros(server.services.config.models.get('model-b')!, prompt, completion);
    // The OpenAI fake reports 11 prompt tokens and one completion token per word (6 words).
    const chat = await server.call('POST', '/v1/chat/completions', {
      key,
      body: { model: 'model-b', messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(chat.status, 200);
    const expected = price(11, 6);
    assert.equal(Number(chat.headers.get('x-tollgate-cost-usd')) * 1e6, expected);
    for (const [path, body, headers] of [
      ['/v1/responses', { model: 'model-b', input: 'hi' }, {}],
      ['/v1/responses', { model: 'model-b', input: 'hi', stream: true }, {}],
      ['/v1/messages', { model: 'model-b', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }, {}],
      [
        '/v1/messages',
        { model: 'model-b', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }], stream: true },
        { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
      ],
    ] as const) {
      const before = await balance();
      const answer = await server.call('POST', path, {
        ...('x-api-key' in headers ? {} : { key }),
        body,
        headers: { ...headers },
      });
      assert.equal(answer.status, 200, `${path} ${JSON.stringify(answer.body).slice(0, 200)}`);
      assert.equal(before - (await balance()), expected, `${path} charge`);
      const row = await record(answer.headers.get('x-request-id'));
      assert.equal(row.model, 'model-b');
      assert.equal(row.prompt_tokens, 11);
      assert.equal(row.completion_tokens, 6);
      assert.equal(row.cost_micros, expected);
      assert.equal(row.status, 'ok');
    }
  });

  it('chat completions, Responses and Messages share one rate limit; a refusal has each protocol’s shape', async () => {
    // A free-trial key: 10 requests per minute, whichever front door they come through.
    const trial = (await server.register()).key;
    const say = { role: 'user', content: 'hi' };
    for (let index = 0; index < 4; index += 1) {
      const [chat, responses] = await Promise.all([
        server.call('POST', '/v1/chat/completions', {
          key: trial,
          body: { model: 'model-c', messages: [say] },
        }),
        server.call('POST', '/v1/responses', { key: trial, body: { model: 'model-c', input: 'hi' } }),
      ]);
      assert.equal(chat.status, 200);
      assert.equal(responses.status, 200);
    }
    for (let index = 0; index < 2; index += 1) {
      const message = await server.call('POST', '/v1/messages', {
        key: trial,
        body: { model: 'model-c', max_tokens: 20, messages: [say] },
      });
      assert.equal(message.status, 200);
    }
    const refused = await server.call('POST', '/v1/messages', {
      key: trial,
      body: { model: 'model-c', max_tokens: 20, messages: [say] },
    });
    assert.equal(refused.status, 429);
    assert.equal(refused.body.type, 'error');
    assert.equal(refused.body.error.type, 'rate_limit_error');
    assert.match(refused.body.error.message, /requests per minute/);
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
    const responses = await server.call('POST', '/v1/responses', {
      key: trial,
      body: { model: 'model-c', input: 'hi' },
    });
    assert.equal(responses.status, 429);
    assert.equal(responses.body.error.code, 'rate_limit_exceeded');
    const chat = await server.call('POST', '/v1/chat/completions', {
      key: trial,
      body: { model: 'model-c', messages: [say] },
    });
    assert.equal(chat.status, 429);
  });

  it('a client that leaves a Responses or Messages stream mid-way is settled as cancelled and frees the upstream', async () => {
    for (const [path, body] of [
      ['/v1/responses', { model: 'model-b', input: 'hi', stream: true }],
      [
        '/v1/messages',
        { model: 'model-b', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }], stream: true },
      ],
    ] as const) {
      openaiUp.script({ kind: 'slow', intervalMs: 20, chunks: 100 });
      const abortedBefore = openaiUp.aborted;
      const leave = new AbortController();
      const answer = await fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: leave.signal,
      });
      const reader = answer.body!.getReader();
      await reader.read();
      leave.abort();
      await reader.read().catch(() => {});
      const requestId = answer.headers.get('x-request-id');
      let row: any;
      for (let tries = 0; tries < 100 && row === undefined; tries += 1) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        await server.services.settlements.flush();
        row = await opened.db.get<any>('SELECT * FROM usage_records WHERE request_id = $1', [requestId]);
      }
      assert.equal(row?.status, 'cancelled', path);
      for (let tries = 0; tries < 100 && openaiUp.aborted === abortedBefore; tries += 1)
        await new Promise((resolve) => setTimeout(resolve, 10));
      assert.equal(openaiUp.aborted, abortedBefore + 1, `${path}: the upstream call was let go`);
    }
  });

  it('Responses: what Tollgate cannot serve is a 400 or 404 in OpenAI’s error shape that says why', async () => {
    const previous = await server.call('POST', '/v1/responses', {
      key,
      body: { model: 'model-c', input: 'hi', previous_response_id: 'resp_123' },
    });
    assert.equal(previous.status, 400);
    assert.equal(previous.body.error.param, 'previous_response_id');
    assert.match(previous.body.error.message, /stores no responses/);
    const hosted = await server.call('POST', '/v1/responses', {
      key,
      body: { model: 'model-c', input: 'hi', tools: [{ type: 'web_search' }] },
    });
    assert.equal(hosted.status, 400);
    assert.match(hosted.body.error.message, /hosted tool "web_search" is not supported/);
    const stored = await server.call('GET', '/v1/responses/resp_123', { key });
    assert.equal(stored.status, 404);
    assert.match(stored.body.error.message, /store: false/);
    const noKey = await server.call('POST', '/v1/responses', { body: { model: 'model-c', input: 'hi' } });
    assert.equal(noKey.status, 401);
    assert.equal(noKey.body.error.type, 'authentication_error');
    const noInput = await server.call('POST', '/v1/responses', { key, body: { model: 'model-c' } });
    assert.equal(noInput.status, 400);
    assert.equal(noInput.body.error.param, 'input');
    const tooMany = await server.call('POST', '/v1/responses', {
      key,
      body: { model: 'model-c', input: 'hi', max_output_tokens: -1 },
    });
    assert.equal(tooMany.status, 400);
    assert.equal(tooMany.body.error.param, 'max_output_tokens', 'named as the client named it');
    assert.match(tooMany.body.error.message, /^max_output_tokens /);
    const unknown = await server.call('POST', '/v1/responses', { key, body: { model: 'nope', input: 'hi' } });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, 'model_not_found');
  });

  it('malformed Responses and Messages bodies are 400s in each protocol’s shape, never a 500', async () => {
    const say = [{ role: 'user', content: 'hi' }];
    const responses: unknown[] = [
      [],
      'text',
      { model: 'model-c', input: 42 },
      { model: 'model-c', input: [42] },
      { model: 'model-c', input: [{ role: 'robot', content: 'hi' }] },
      { model: 'model-c', input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] },
      { model: 'model-c', input: [{ role: 'user', content: { text: 'hi' } }] },
      { model: 'model-c', input: [{ type: 'function_call', name: 'f' }] },
      { model: 'model-c', input: [{ type: 'function_call_output', output: 'x' }] },
      { model: 'model-c', input: [{ type: 'item_reference', id: 'msg_1' }] },
      { model: 'model-c', input: [{ type: 'function_call_output', call_id: 'c', output: { no: 1 } }] },
      { model: 'model-c', input: 'hi', instructions: ['x'] },
      { model: 'model-c', input: 'hi', tools: 'all' },
      { model: 'model-c', input: 'hi', tools: [{ type: 'function' }] },
      { model: 'model-c', input: 'hi', tools: [null] },
      { model: 'model-c', input: 'hi', tool_choice: { type: 'file_search' } },
      { model: 'model-c', input: 'hi', text: { format: { type: 'yaml' } } },
      { model: 'model-c', input: 'hi', temperature: 'hot' },
      { model: 'model-c', input: 'hi', stream: 'yes' },
    ];
    for (const body of responses) {
      const answer = await server.call('POST', '/v1/responses', { key, body });
      assert.equal(answer.status, 400, `${JSON.stringify(body)}: ${JSON.stringify(answer.body)}`);
      assert.equal(answer.body.error.type, 'invalid_request_error');
      assert.equal(typeof answer.body.error.message, 'string');
    }
    const messages: unknown[] = [
      [],
      { model: 'model-c', max_tokens: 5 },
      { model: 'model-c', max_tokens: 5, messages: [] },
      { model: 'model-c', max_tokens: 5, messages: ['hi'] },
      { model: 'model-c', max_tokens: 5, messages: [{ role: 'system', content: 'hi' }] },
      { model: 'model-c', max_tokens: 5, messages: [{ role: 'user', content: 7 }] },
      { model: 'model-c', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'image' }] }] },
      { model: 'model-c', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'text' }] }] },
      {
        model: 'model-c',
        max_tokens: 5,
        messages: [{ role: 'user', content: [{ type: 'tool_use', id: 'a', name: 'f' }] }],
      },
      {
        model: 'model-c',
        max_tokens: 5,
        messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 1 }] }],
      },
      { model: 'model-c', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'tool_result' }] }] },
      {
        model: 'model-c',
        max_tokens: 5,
        messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: { x: 1 } }] }],
      },
      { model: 'model-c', max_tokens: 5, messages: say, system: 5 },
      { model: 'model-c', max_tokens: 5, messages: say, system: [{ type: 'image' }] },
      { model: 'model-c', max_tokens: 'many', messages: say },
      { model: 'model-c', max_tokens: 5, messages: say, tools: {} },
      { model: 'model-c', max_tokens: 5, messages: say, tools: [{ description: 'no name' }] },
      { model: 'model-c', max_tokens: 5, messages: say, tool_choice: 'auto' },
      { model: 'model-c', max_tokens: 5, messages: say, tool_choice: { type: 'tool' } },
      { model: 'model-c', max_tokens: 5, messages: say, stop_sequences: 'END' },
      { model: 'model-c', max_tokens: 5, messages: say, temperature: -1 },
    ];
    for (const body of messages) {
      const answer = await server.call('POST', '/v1/messages', { key, body });
      assert.equal(answer.status, 400, `${JSON.stringify(body)}: ${JSON.stringify(answer.body)}`);
      assert.equal(answer.body.type, 'error');
      assert.equal(answer.body.error.type, 'invalid_request_error');
    }
    // A tool_use input nested 20 000 levels deep: JSON.parse takes it, JSON.stringify would overflow the stack.
    const tooDeep = await server.call('POST', '/v1/messages', {
      key,
      body: `{"model":"model-c","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}}]}]}`,
    });
    assert.equal(tooDeep.status, 400, JSON.stringify(tooDeep.body).slice(0, 200));
  });

  it('Messages: errors in Anthropic’s shape with the right statuses, as the SDK reads them', async () => {
    const missing = await server.call('POST', '/v1/messages', {
      key,
      body: { model: 'model-c', messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.type, 'error');
    assert.equal(missing.body.error.type, 'invalid_request_error');
    assert.match(missing.body.error.message, /max_tokens/);
    const noKey = await server.call('POST', '/v1/messages', {
      body: { model: 'model-c', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(noKey.status, 401);
    assert.equal(noKey.body.error.type, 'authentication_error');
    const unknown = await server.call('POST', '/v1/messages', {
      key,
      body: { model: 'nope', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.type, 'not_found_error');
    const serverTool = await server.call('POST', '/v1/messages', {
      key,
      body: {
        model: 'model-c',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ type: 'web_search_20250305', name: 'web_search' }],
      },
    });
    assert.equal(serverTool.status, 400);
    assert.match(serverTool.body.error.message, /server tool/);
    const bad = new Anthropic({ apiKey: 'tg-not-a-key', baseURL: server.url, maxRetries: 0 });
    await assert.rejects(
      bad.messages.create({ model: 'model-c', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
      (error: unknown) => error instanceof Anthropic.AuthenticationError && error.status === 401,
    );
  });

  it('a stream that breaks after its first chunk ends with the protocol’s own error event', async () => {
    openaiUp.script({ kind: 'cut', after: 2 });
    const responses = await fetch(`${server.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'model-b', input: 'hi', stream: true }),
    });
    const responsesText = await responses.text();
    assert.match(responsesText, /event: error\ndata: \{"type":"error","code":"provider_error"/);
    assert.doesNotMatch(responsesText, /response\.completed/);
    openaiUp.script({ kind: 'cut', after: 2 });
    const messages = await fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'model-b',
        max_tokens: 50,
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      }),
    });
    const messagesText = await messages.text();
    assert.match(messagesText, /^event: message_start\n.*\n\nevent: ping\ndata: \{"type":"ping"\}\n\n/);
    assert.match(messagesText, /event: error\ndata: \{"type":"error","error":\{"type":"api_error"/);
    assert.doesNotMatch(messagesText, /message_stop/);
  });
});
