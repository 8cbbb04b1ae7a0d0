import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { countTextTokens } from '../src/core/count-tokens.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

/** `n` choices through the openai SDK, whole and streamed: billed as the prompt once and every choice's answer. */
describe('n choices on chat completions', () => {
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
        providers: [{ id: 'claude', type: 'anthropic', base_url: 'http://127.0.0.1:9' }],
        models: { 'model-f': { deployments: [{ provider: 'claude', model: 'claude-test' }] } },
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
  const messages = [{ role: 'user' as const, content: 'Give me three taglines for a bakery' }];

  it('n: 3 whole: three different choices, usage and charge count each choice’s answer once', async () => {
    const before = await balance();
    const answer = await openai.chat.completions.create({ model: 'model-a', messages, n: 3 });
    assert.deepEqual(
      answer.choices.map((choice) => choice.index),
      [0, 1, 2],
    );
    const texts = answer.choices.map((choice) => choice.message.content ?? '');
    assert.equal(new Set(texts).size, 3, 'three samples, not one repeated');
    // model-a reasons before each answer: its hidden reasoning is part of each choice's completion.
    const reasoning = answer.usage!.completion_tokens_details?.reasoning_tokens ?? 0;
    assert.ok(reasoning > 0, 'each choice of a reasoning model reports its reasoning');
    const completion = texts.reduce((sum, text) => sum + countTextTokens(text), 0) + reasoning;
    assert.equal(answer.usage!.completion_tokens, completion);
    const one = await openai.chat.completions.create({ model: 'model-a', messages });
    assert.equal(answer.usage!.prompt_tokens, one.usage!.prompt_tokens, 'the prompt counts once');
    assert.equal(one.choices[0]!.message.content, texts[0], 'the first choice is the one-choice answer');
    const charged = before - (await balance());
    const cost = (prompt: number, out: number) => Math.ceil((prompt * 3_500_000 + out * 18_000_000) / 1e6);
    assert.equal(
      charged,
      cost(answer.usage!.prompt_tokens, completion) +
        cost(one.usage!.prompt_tokens, one.usage!.completion_tokens),
    );
  });

  it('n: 3 streamed: every chunk names its choice; the texts are the whole answer’s; usage counts all three', async () => {
    const whole = await openai.chat.completions.create({ model: 'model-b', messages, n: 3 });
    const stream = await openai.chat.completions.create({
      model: 'model-b',
      messages,
      n: 3,
      stream: true,
      stream_options: { include_usage: true },
    });
    const texts = ['', '', ''];
    const finishes: (string | null)[] = [null, null, null];
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        texts[choice.index] += choice.delta.content ?? '';
        if (choice.finish_reason) finishes[choice.index] = choice.finish_reason;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    assert.deepEqual(
      texts,
      whole.choices.map((choice) => choice.message.content),
    );
    assert.deepEqual(finishes, ['stop', 'stop', 'stop']);
    assert.deepEqual(usage, whole.usage);
  });

  it('OpenRouter’s usage: {include: true} asks for the usage chunk as stream_options.include_usage does', async () => {
    const stream = await openai.chat.completions.create({
      model: 'model-b',
      messages,
      stream: true,
      usage: { include: true },
    } as never);
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>)
      if (chunk.usage) usage = chunk.usage;
    assert.ok(usage && usage.completion_tokens > 0, 'the last chunk carries the usage');
    const bad = await server.call('POST', '/v1/chat/completions', {
      key,
      body: { model: 'model-b', messages, usage: { include: 'yes' } },
    });
    assert.equal(bad.status, 400);
  });

  it('n is held for the worst case, capped at 8, and refused for a model whose upstream answers one choice', async () => {
    const tooMany = await server.call('POST', '/v1/chat/completions', {
      key,
      body: { model: 'model-a', messages, n: 9 },
    });
    assert.equal(tooMany.status, 400);
    assert.equal(tooMany.body.error.param, 'n');
    const anthropic = await server.call('POST', '/v1/chat/completions', {
      key,
      body: { model: 'model-f', messages, n: 2 },
    });
    assert.equal(anthropic.status, 400);
    assert.match(anthropic.body.error.message, /model-f/);
    // 8 × 32,768 answer tokens of model-a ($18 per million) need $4.72 held: more than the trial’s dollar (Enterprise: no rate limits in the way).
    const poor = (await server.registerOn('enterprise')).key;
    const held = await server.call('POST', '/v1/chat/completions', {
      key: poor,
      body: { model: 'model-a', messages, n: 8, max_tokens: 32_768 },
    });
    assert.equal(held.status, 402, JSON.stringify(held.body));
    const single = await server.call('POST', '/v1/chat/completions', {
      key: poor,
      body: { model: 'model-a', messages, n: 1, max_tokens: 32_768 },
    });
    assert.equal(single.status, 200, 'one choice of the same size fits');
  });
});
