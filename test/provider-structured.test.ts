// The gemini adapter against a wire-format fake, and structured outputs and tools through the openai,
// anthropic and gemini adapters, all through the real server with the official openai SDK.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI, { APIError } from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { type FakeGemini, startFakeGemini } from '../src/providers/gemini/fake-gemini.ts';
import { startFakeOpenAI } from '../src/providers/openai/fake-openai.ts';
import { startFakeAnthropic } from '../src/providers/anthropic/fake-anthropic.ts';
import type { FakeUpstream } from '../src/providers/fake-upstream.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

const GEMINI_KEY = 'gk-fake-gemini-key';

const Answer = z.object({
  city: z.string(),
  days: z.array(z.object({ day: z.number().int(), sky: z.enum(['sun', 'rain']) })),
  note: z.string().nullable(),
});

const weatherTool: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather for a place',
    parameters: {
      type: 'object',
      properties: { place: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
      required: ['place'],
    },
  },
};

describe('providers: gemini, and structured outputs and tools through every adapter', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let client: OpenAI;
  let gemini: FakeGemini;
  let openai: FakeUpstream;
  let claude: FakeUpstream;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    [gemini, openai, claude] = await Promise.all([
      startFakeGemini(GEMINI_KEY),
      startFakeOpenAI(),
      startFakeAnthropic(),
    ]);
    server = await startTestServer({
      backend: opened,
      env: { FAKE_GEMINI_KEY: GEMINI_KEY },
      yaml: {
        providers: [
          { id: 'google', type: 'gemini', base_url: gemini.url, api_key_env: 'FAKE_GEMINI_KEY' },
          { id: 'oai', type: 'openai', base_url: openai.url },
          { id: 'claude', type: 'anthropic', base_url: claude.url },
        ],
        models: {
          'model-a': { deployments: [{ provider: 'google', model: 'gemini-test' }] },
          'model-b': { deployments: [{ provider: 'oai', model: 'gpt-test' }] },
          'model-c': { deployments: [{ provider: 'claude', model: 'claude-test' }] },
        },
        timeouts: { connect_ms: 500, first_byte_ms: 400, idle_stream_ms: 400 },
        routing: { max_attempts: 2, retry_base_ms: 5, retry_max_ms: 20, breaker_failure_threshold: 50 },
      },
    });
    const registered = await server.registerOn('pro');
    client = new OpenAI({ apiKey: registered.key, baseURL: `${server.url}/v1`, maxRetries: 0 });
  });
  after(async () => {
    await server?.close();
    await Promise.all([gemini?.close(), openai?.close(), claude?.close()]);
    await opened?.cleanup();
  });

  describe('gemini', () => {
    it('a plain answer: systemInstruction, user/model contents, generationConfig, the key header; usage mapped', async () => {
      gemini.script({ kind: 'ok', text: 'Bonjour from Gemini.' });
      const completion = await client.chat.completions.create({
        model: 'model-a',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Hi' },
          { role: 'assistant', content: 'Hello.' },
          { role: 'user', content: 'In French?' },
        ],
        temperature: 0.3,
        top_p: 0.9,
        max_tokens: 50,
        stop: ['END'],
      });
      assert.equal(completion.choices[0]?.message.content, 'Bonjour from Gemini.');
      assert.equal(completion.choices[0]?.finish_reason, 'stop');
      assert.equal(completion.model, 'model-a');
      assert.deepEqual(
        completion.usage && { p: completion.usage.prompt_tokens, c: completion.usage.completion_tokens },
        {
          p: 17,
          c: 12,
        },
      );
      const sent = gemini.received.at(-1)!;
      assert.equal(sent.path, '/v1beta/models/gemini-test:generateContent');
      assert.equal(sent.headers['x-goog-api-key'], GEMINI_KEY);
      assert.deepEqual(sent.body.systemInstruction, { parts: [{ text: 'Be brief.' }] });
      assert.deepEqual(
        sent.body.contents.map((c: { role: string }) => c.role),
        ['user', 'model', 'user'],
      );
      assert.deepEqual(sent.body.generationConfig, {
        temperature: 0.3,
        topP: 0.9,
        maxOutputTokens: 50,
        stopSequences: ['END'],
      });
    });

    it('a streamed answer arrives piece by piece over alt=sse, then usage', async () => {
      gemini.script({ kind: 'ok', text: 'One two three four.' });
      const stream = await client.chat.completions.create({
        model: 'model-a',
        messages: [{ role: 'user', content: 'Count' }],
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let pieces = 0;
      let finish: string | null | undefined;
      let usage: OpenAI.CompletionUsage | null | undefined;
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta.content) {
          text += chunk.choices[0].delta.content;
          pieces++;
        }
        finish = chunk.choices[0]?.finish_reason ?? finish;
        usage = chunk.usage ?? usage;
      }
      assert.equal(text, 'One two three four.');
      assert.equal(pieces, 4);
      assert.equal(finish, 'stop');
      assert.equal(usage?.completion_tokens, 12);
      assert.equal(gemini.received.at(-1)!.path, '/v1beta/models/gemini-test:streamGenerateContent?alt=sse');
    });

    it('finish reasons: MAX_TOKENS is length, SAFETY and a blocked prompt are content_filter', async () => {
      gemini.script({ kind: 'finish', reason: 'MAX_TOKENS', text: 'Cut' });
      const cut = await client.chat.completions.create({
        model: 'model-a',
        messages: [{ role: 'user', content: 'x' }],
      });
      assert.equal(cut.choices[0]?.finish_reason, 'length');
      gemini.script({ kind: 'finish', reason: 'SAFETY' });
      const unsafe = await client.chat.completions.create({
        model: 'model-a',
        messages: [{ role: 'user', content: 'x' }],
      });
      assert.equal(unsafe.choices[0]?.finish_reason, 'content_filter');
      gemini.script({ kind: 'blocked', reason: 'PROHIBITED_CONTENT' });
      const stream = await client.chat.completions.create({
        model: 'model-a',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
      });
      let finish: string | null | undefined;
      for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish;
      assert.equal(finish, 'content_filter');
    });

    it('errors: a 400 is the client’s 400; 429 and 503 are retried, then 502; a cut stream is an error', async () => {
      gemini.script({ kind: 'status', status: 400, message: 'Invalid JSON payload received.' });
      await assert.rejects(
        client.chat.completions.create({ model: 'model-a', messages: [{ role: 'user', content: 'x' }] }),
        (error: unknown) =>
          error instanceof APIError && error.status === 400 && /Invalid JSON payload/.test(error.message),
      );
      const before = gemini.received.length;
      gemini.script({ kind: 'status', status: 429 }, { kind: 'status', status: 503 });
      await assert.rejects(
        client.chat.completions.create({ model: 'model-a', messages: [{ role: 'user', content: 'x' }] }),
        (error: unknown) => error instanceof APIError && error.status === 502,
      );
      assert.equal(gemini.received.length - before, 2, 'the 429 was retried');
      gemini.script({ kind: 'status', status: 503 });
      const retried = await client.chat.completions.create({
        model: 'model-a',
        messages: [{ role: 'user', content: 'x' }],
      });
      assert.equal(retried.choices[0]?.finish_reason, 'stop');
      gemini.script({ kind: 'cut', after: 2 }, { kind: 'cut', after: 2 });
      const stream = await client.chat.completions.create({
        model: 'model-a',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
      });
      await assert.rejects(async () => {
        for await (const chunk of stream) void chunk;
      });
      const health = await client.chat.completions.create({
        model: 'model-a',
        messages: [{ role: 'user', content: 'ok?' }],
      });
      assert.ok(health.choices[0]?.message.content);
    });
  });

  for (const [name, model] of [
    ['gemini', 'model-a'],
    ['openai', 'model-b'],
    ['anthropic', 'model-c'],
  ] as const) {
    describe(`structured output and tools through the ${name} adapter`, () => {
      it('chat.completions.parse with zodResponseFormat gets a valid object, whole and streamed', async () => {
        const instance = { city: 'Oslo', days: [{ day: 1, sky: 'sun' }], note: null };
        if (name === 'openai') openai.script({ kind: 'ok', text: JSON.stringify(instance) });
        if (name === 'anthropic')
          claude.script({
            kind: 'ok',
            toolCall: { name: 'structured_answer', arguments: JSON.stringify(instance) },
          });
        const format = zodResponseFormat(Answer, 'forecast');
        const completion = await client.chat.completions.parse({
          model,
          messages: [{ role: 'user', content: 'Forecast?' }],
          response_format: format,
        });
        const parsed = completion.choices[0]?.message.parsed;
        assert.ok(parsed);
        Answer.parse(parsed);
        assert.equal(completion.choices[0]?.finish_reason, 'stop');
        if (name === 'openai') assert.deepEqual(openai.received.at(-1)!.body.response_format, format);
        if (name === 'anthropic') {
          const sent = claude.received.at(-1)!.body;
          assert.deepEqual(sent.tool_choice, { type: 'tool', name: 'structured_answer' });
          assert.deepEqual(sent.tools[0].input_schema.properties, format.json_schema.schema!['properties']);
        }
        if (name === 'gemini') {
          const config = gemini.received.at(-1)!.body.generationConfig;
          assert.equal(config.responseMimeType, 'application/json');
          assert.deepEqual(config.responseJsonSchema, format.json_schema.schema);
        }

        if (name === 'openai') openai.script({ kind: 'ok', text: JSON.stringify(instance) });
        if (name === 'anthropic')
          claude.script({
            kind: 'ok',
            toolCall: { name: 'structured_answer', arguments: JSON.stringify(instance) },
          });
        const stream = await client.chat.completions.create({
          model,
          messages: [{ role: 'user', content: 'Forecast?' }],
          response_format: format,
          stream: true,
        });
        let text = '';
        let finish: string | null | undefined;
        for await (const chunk of stream) {
          text += chunk.choices[0]?.delta.content ?? '';
          finish = chunk.choices[0]?.finish_reason ?? finish;
        }
        Answer.parse(JSON.parse(text));
        assert.equal(finish, 'stop');
      });

      it('a tools round trip: the call with nested arguments, the result sent back, then the answer', async () => {
        const args = JSON.stringify({ place: { city: 'Oslo' } });
        if (name === 'openai')
          openai.script({ kind: 'ok', toolCall: { name: 'get_weather', arguments: args } });
        if (name === 'anthropic')
          claude.script({ kind: 'ok', toolCall: { name: 'get_weather', arguments: args } });
        const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Oslo?' }];
        const first = await client.chat.completions.create({ model, messages, tools: [weatherTool] });
        const call = first.choices[0]?.message.tool_calls?.[0];
        assert.equal(first.choices[0]?.finish_reason, 'tool_calls');
        assert.ok(call && call.type === 'function' && call.id);
        assert.equal(call.function.name, 'get_weather');
        const parsedArgs = JSON.parse(call.function.arguments) as { place: { city: string } };
        assert.equal(typeof parsedArgs.place.city, 'string', 'nested arguments arrive');
        messages.push(first.choices[0].message, {
          role: 'tool',
          tool_call_id: call.id,
          content: '{"temp": 4}',
        });
        const second = await client.chat.completions.create({ model, messages, tools: [weatherTool] });
        assert.equal(second.choices[0]?.finish_reason, 'stop');
        assert.ok(second.choices[0]?.message.content);
        if (name === 'gemini') {
          const sent = gemini.received.at(-1)!.body;
          assert.deepEqual(
            sent.tools[0].functionDeclarations[0].parametersJsonSchema,
            weatherTool.function.parameters,
          );
          assert.deepEqual(
            sent.contents.map((c: { role: string }) => c.role),
            ['user', 'model', 'user'],
          );
          assert.deepEqual(sent.contents[1].parts[0].functionCall.args, parsedArgs);
          assert.deepEqual(sent.contents[2].parts[0].functionResponse, {
            id: call.id,
            name: 'get_weather',
            response: { temp: 4 },
          });
          assert.match(second.choices[0]?.message.content ?? '', /^From the function response/);
        }
        if (name === 'anthropic') {
          const sent = claude.received.at(-1)!.body;
          assert.equal(sent.messages[2].content[0].type, 'tool_result');
        }
        if (name === 'openai') assert.equal(openai.received.at(-1)!.body.messages[2].tool_call_id, call.id);
      });
    });
  }

  it('gemini: a malformed answer or stream event is a 502, and the server keeps serving', async () => {
    gemini.script({ kind: 'malformed' }, { kind: 'malformed' });
    await assert.rejects(
      client.chat.completions.create({ model: 'model-a', messages: [{ role: 'user', content: 'x' }] }),
      (error: unknown) => error instanceof APIError && error.status === 502,
    );
    gemini.script({ kind: 'malformed' });
    const stream = await client.chat.completions.create({
      model: 'model-a',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    await assert.rejects(async () => {
      for await (const chunk of stream) void chunk;
    });
    const after = await client.chat.completions.create({
      model: 'model-a',
      messages: [{ role: 'user', content: 'x' }],
    });
    assert.equal(after.choices[0]?.finish_reason, 'stop');
  });

  it('a malformed response_format is a 400 naming the field', async () => {
    for (const response_format of [
      { type: 'xml' },
      { type: 'json_schema', json_schema: { schema: { type: 'object' } } },
      { type: 'json_schema', json_schema: { name: 'x', schema: 'object' } },
    ]) {
      await assert.rejects(
        client.chat.completions.create({
          model: 'model-a',
          messages: [{ role: 'user', content: 'x' }],
          response_format: response_format as never,
        }),
        (error: unknown) =>
          error instanceof APIError && error.status === 400 && /response_format/.test(error.message),
      );
    }
  });

  it('gemini honours tool_choice: a named function is forced through allowedFunctionNames', async () => {
    const other: OpenAI.ChatCompletionTool = {
      type: 'function',
      function: { name: 'other', parameters: { type: 'object', properties: { q: { type: 'string' } } } },
    };
    const forced = await client.chat.completions.create({
      model: 'model-a',
      messages: [{ role: 'user', content: 'x' }],
      tools: [weatherTool, other],
      tool_choice: { type: 'function', function: { name: 'other' } },
    });
    assert.equal(
      forced.choices[0]?.message.tool_calls?.[0]?.type === 'function' &&
        forced.choices[0].message.tool_calls[0].function.name,
      'other',
    );
    assert.deepEqual(gemini.received.at(-1)!.body.toolConfig, {
      functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['other'] },
    });
  });

  it('anthropic refuses a schema whose root is not an object with a 400 naming the model', async () => {
    await assert.rejects(
      client.chat.completions.create({
        model: 'model-c',
        messages: [{ role: 'user', content: 'x' }],
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'list', schema: { type: 'array', items: {} } },
        },
      }),
      (error: unknown) => error instanceof APIError && error.status === 400 && /model-c/.test(error.message),
    );
  });
});
