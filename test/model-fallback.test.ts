import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

/** OpenRouter's `models: [...]`: the models in order until one answers; the answer names it and is billed at its price. */
describe('request-level model fallbacks (models: [...])', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let key: string;
  let openai: OpenAI;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    server = await startTestServer({
      backend: opened,
      yaml: {
        simulator: { chunk_interval_ms: 1, first_token_ms: 0 },
        // Nothing listens on port 9: model-f's only upstream cannot be reached.
        providers: [{ id: 'down', type: 'openai', base_url: 'http://127.0.0.1:9/v1' }],
        models: { 'model-f': { deployments: [{ provider: 'down', model: 'gone' }] } },
        routing: { max_attempts: 1, retry_base_ms: 1, retry_max_ms: 2 },
        timeouts: { connect_ms: 200 },
      },
    });
    key = (await server.registerOn('pro')).key;
    openai = new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 });
  });
  after(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  const balance = async (): Promise<number> => {
    await server.services.settlements.flush();
    return Math.round((await server.call('GET', '/api/account', { key })).body.balance_usd * 1e6);
  };
  const messages = [{ role: 'user' as const, content: 'hello' }];

  it('a failing first model gives way to the next, which names itself and is billed at its own price', async () => {
    const before = await balance();
    const answer = await openai.chat.completions.create({
      model: 'model-f',
      models: ['model-f', 'model-b'],
      messages,
    } as never);
    const completion = answer as unknown as OpenAI.ChatCompletion;
    assert.equal(completion.model, 'model-b');
    const { prompt_tokens: prompt, completion_tokens: out } = completion.usage!;
    // model-b: USD 0.13 per million tokens in and out.
    assert.equal(before - (await balance()), Math.ceil(((prompt + out) * 130_000) / 1e6));

    const stream = await openai.chat.completions.create({
      models: ['model-f', 'model-c'],
      messages,
      stream: true,
    } as never);
    const seen = new Set<string>();
    for await (const chunk of stream as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>)
      seen.add(chunk.model);
    assert.deepEqual([...seen], ['model-c']);
  });

  it('the last model’s failure is the answer; a bad models list is a 400', async () => {
    const failed = await server.call('POST', '/v1/chat/completions', {
      key,
      body: { models: ['model-f'], messages },
    });
    assert.equal(failed.status, 502);
    const bad = await server.call('POST', '/v1/chat/completions', {
      key,
      body: { models: 'model-b', messages },
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, 'models');
  });
});
