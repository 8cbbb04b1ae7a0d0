import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod';
import OpenAI from 'openai';
import { z } from 'zod';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

/** What the Anthropic SDK checks beyond plain text: structured output, stop sequences, tool ids, models. */
describe('Anthropic clients’ details on the Messages door (simulator)', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let anthropic: Anthropic;
  let openai: OpenAI;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    server = await startTestServer({
      backend: opened,
      yaml: { simulator: { chunk_interval_ms: 1, first_token_ms: 0 } },
    });
    const { key } = await server.registerOn('pro');
    anthropic = new Anthropic({ apiKey: key, baseURL: server.url, maxRetries: 0 });
    openai = new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 });
  });
  after(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  it('messages.parse with a zod schema gets JSON of that schema', async () => {
    const Answer = z.object({ city: z.string(), celsius: z.number(), sunny: z.boolean() });
    const message = await anthropic.messages.parse({
      model: 'model-b',
      max_tokens: 400,
      messages: [{ role: 'user', content: 'The weather in Paris, as JSON' }],
      output_config: { format: zodOutputFormat(Answer) },
    });
    assert.ok(message.parsed_output, 'parsed');
    assert.equal(typeof message.parsed_output.city, 'string');
    assert.equal(typeof message.parsed_output.celsius, 'number');
    const bad = await server.call('POST', '/v1/messages', {
      headers: { 'x-api-key': (anthropic as any).apiKey },
      body: {
        model: 'model-b',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'x' }],
        output_config: { format: { type: 'yaml' } },
      },
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /output_config\.format/);
  });

  it('a stop sequence that ends the answer is stop_reason stop_sequence with the string, whole and streamed', async () => {
    const ask = {
      model: 'model-b',
      max_tokens: 200,
      messages: [{ role: 'user' as const, content: 'Tell me about the gateway' }],
      stop_sequences: ['zzz-never', 'e'],
    };
    const whole = await anthropic.messages.create(ask);
    assert.equal(whole.stop_reason, 'stop_sequence');
    assert.equal(whole.stop_sequence, 'e');
    const text = whole.content[0]?.type === 'text' ? whole.content[0].text : '';
    assert.ok(!text.includes('e'), 'the text stops before the sequence');
    const streamed = await anthropic.messages.stream(ask).finalMessage();
    assert.equal(streamed.stop_reason, 'stop_sequence');
    assert.equal(streamed.stop_sequence, 'e');
    const natural = await anthropic.messages.create({ ...ask, stop_sequences: ['zzz-never'] });
    assert.equal(natural.stop_reason, 'end_turn');
    assert.equal(natural.stop_sequence, null);
  });

  it('tool_use ids are toolu_ ids, and a tool round trip with them works', async () => {
    const tools = [
      {
        name: 'get_weather',
        description: 'The weather in a city',
        input_schema: {
          type: 'object' as const,
          properties: { city: { type: 'string' } },
          required: ['city'],
        },
      },
    ];
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Weather in Oslo?' }];
    const first = await anthropic.messages.create({ model: 'model-c', max_tokens: 200, tools, messages });
    const call = first.content.find((block) => block.type === 'tool_use');
    assert.ok(call?.type === 'tool_use');
    assert.match(call.id, /^toolu_/);
    const streamed = await anthropic.messages
      .stream({ model: 'model-c', max_tokens: 200, tools, messages })
      .finalMessage();
    const streamedCall = streamed.content.find((block) => block.type === 'tool_use');
    assert.match(streamedCall?.type === 'tool_use' ? streamedCall.id : '', /^toolu_/);
    const second = await anthropic.messages.create({
      model: 'model-c',
      max_tokens: 200,
      tools,
      messages: [
        ...messages,
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '12 degrees' }] },
      ],
    });
    assert.equal(second.stop_reason, 'end_turn');
  });

  it('models.list gets Anthropic model objects; the OpenAI list keeps a stable created per model', async () => {
    const listed: Anthropic.ModelInfo[] = [];
    for await (const model of anthropic.models.list()) listed.push(model);
    assert.ok(listed.length >= 6);
    const first = listed[0]!;
    assert.equal(first.type, 'model');
    assert.equal(first.id, 'model-a');
    assert.ok(!Number.isNaN(Date.parse(first.created_at)));
    assert.equal(typeof first.display_name, 'string');
    const one = await anthropic.models.retrieve('model-b');
    assert.equal(one.type, 'model');

    const models = await openai.models.list();
    const created = models.data.map((model) => model.created);
    assert.ok(new Set(created).size > 1, 'not one start time for every model');
    assert.ok(created.every((value) => value < Date.now() / 1000 - 86_400));
  });

  it('chat answers carry a system_fingerprint', async () => {
    const answer = await openai.chat.completions.create({
      model: 'model-b',
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.match(answer.system_fingerprint ?? '', /^fp_/);
  });
});
