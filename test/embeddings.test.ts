import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createOpenAI } from '@ai-sdk/openai';
import { cosineSimilarity, embedMany } from 'ai';
import OpenAI from 'openai';
import { countTextTokens } from '../src/core/count-tokens.ts';
import { type FakeGemini, startFakeGemini } from '../src/providers/gemini/fake-gemini.ts';
import { startFakeOpenAI } from '../src/providers/openai/fake-openai.ts';
import type { FakeUpstream } from '../src/providers/fake-upstream.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

const GEMINI_KEY = 'gk-fake-gemini-key';
/** µUSD per million input tokens of the test's priced models: 13 µUSD a token, so every token shows. */
const PRICE = 13_000_000;

const DOCS = [
  'The cat sat on the warm mat by the fire.',
  'A cat was sitting on the mat near the fireplace.',
  'Quarterly revenue grew by twelve percent in Europe.',
];

const cosine = (a: number[], b: number[]): number => a.reduce((sum, value, i) => sum + value * b[i]!, 0);
const norm = (v: number[]): number => Math.sqrt(cosine(v, v));

describe('POST /v1/embeddings', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let gemini: FakeGemini;
  let upstream: FakeUpstream;
  let key: string;
  let openai: OpenAI;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    [gemini, upstream] = await Promise.all([startFakeGemini(GEMINI_KEY), startFakeOpenAI()]);
    server = await startTestServer({
      backend: opened,
      env: { FAKE_GEMINI_KEY: GEMINI_KEY },
      yaml: {
        providers: [
          { id: 'google', type: 'gemini', base_url: gemini.url, api_key_env: 'FAKE_GEMINI_KEY' },
          { id: 'oai', type: 'openai', base_url: upstream.url },
        ],
        embedding_models: {
          'embed-priced': { price: { input: PRICE / 1e6 }, dimensions: 512 },
          'embed-oai': {
            price: { input: PRICE / 1e6 },
            dimensions: 64,
            deployments: [{ provider: 'oai', model: 'text-embedding-up' }],
          },
          'embed-gem': {
            price: { input: PRICE / 1e6 },
            dimensions: 64,
            deployments: [{ provider: 'google', model: 'gemini-embedding-up' }],
          },
        },
      },
    });
    key = (await server.registerOn('pro')).key;
    openai = new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 });
  });
  after(async () => {
    await server?.close();
    await Promise.all([gemini?.close(), upstream?.close()]);
    await opened?.cleanup();
  });

  const balance = async (): Promise<number> => {
    await server.services.settlements.flush();
    return Math.round((await server.call('GET', '/api/account', { key })).body.balance_usd * 1e6);
  };

  it('openai.embeddings.create: unit vectors, deterministic, similar texts closer; billed per input token exactly', async () => {
    const before = await balance();
    const answer = await openai.embeddings.create({ model: 'embed-priced', input: DOCS });
    assert.equal(answer.object, 'list');
    assert.equal(answer.model, 'embed-priced');
    assert.deepEqual(
      answer.data.map((item) => item.index),
      [0, 1, 2],
    );
    const [cat, cat2, money] = answer.data.map((item) => item.embedding);
    for (const vector of [cat!, cat2!, money!]) {
      assert.equal(vector.length, 512);
      assert.ok(Math.abs(norm(vector) - 1) < 1e-5);
    }
    assert.ok(cosine(cat!, cat2!) > cosine(cat!, money!) + 0.2, 'the two cat sentences are closer');
    const tokens = DOCS.reduce((sum, doc) => sum + countTextTokens(doc), 0);
    assert.equal(answer.usage.prompt_tokens, tokens);
    assert.equal(answer.usage.total_tokens, tokens);
    assert.equal(before - (await balance()), Math.ceil((tokens * PRICE) / 1e6));

    // Same text, same vector (the SDK asked base64; floats give the same values at float32 precision).
    const again = await openai.embeddings.create({
      model: 'embed-priced',
      input: DOCS[0]!,
      encoding_format: 'float',
    });
    assert.ok(again.data[0]!.embedding.every((value, i) => Math.abs(value - cat![i]!) < 1e-6));
    const short = await openai.embeddings.create({ model: 'embed-a', input: 'hello', dimensions: 32 });
    assert.equal(short.data[0]!.embedding.length, 32);
  });

  it('the AI SDK’s embedMany: a query is nearest the document that says the same', async () => {
    const provider = createOpenAI({ baseURL: `${server.url}/v1`, apiKey: key });
    const { embeddings, usage } = await embedMany({
      model: provider.embedding('embed-a'),
      values: [...DOCS, 'Where is the cat sitting? On the mat.'],
      maxRetries: 0,
    });
    assert.equal(embeddings.length, 4);
    assert.equal(embeddings[0]!.length, 1024);
    const query = embeddings[3]!;
    const scores = DOCS.map((_, i) => cosineSimilarity(query, embeddings[i]!));
    assert.ok(scores[0]! > scores[2]! && scores[1]! > scores[2]!, `scores ${scores.join(', ')}`);
    assert.ok(usage.tokens > 0);
  });

  it('an OpenAI upstream is passed through, billed on the tokens it reports', async () => {
    const before = await balance();
    const answer = await openai.embeddings.create({ model: 'embed-oai', input: ['alpha beta', 'gamma'] });
    const sent = upstream.received.at(-1)!;
    assert.equal(sent.path, '/v1/embeddings');
    assert.equal(sent.body.model, 'text-embedding-up');
    assert.deepEqual(sent.body.input, ['alpha beta', 'gamma']);
    assert.equal(answer.model, 'embed-oai');
    assert.equal(answer.data[0]!.embedding.length, 64);
    // The fake counts a token per character: 10 + 5.
    assert.equal(answer.usage.prompt_tokens, 15);
    assert.equal(before - (await balance()), Math.ceil((15 * PRICE) / 1e6));
    const tokenInput = await openai.embeddings.create({ model: 'embed-oai', input: [[1, 2, 3]] });
    assert.equal(tokenInput.usage.prompt_tokens, 3);
  });

  it('Gemini: one input through embedContent, several through batchEmbedContents, with outputDimensionality', async () => {
    const one = await openai.embeddings.create({ model: 'embed-gem', input: 'hello there' });
    let sent = gemini.received.at(-1)!;
    assert.equal(sent.path, '/v1beta/models/gemini-embedding-up:embedContent');
    assert.deepEqual(sent.body.content, { parts: [{ text: 'hello there' }] });
    assert.equal(one.data[0]!.embedding.length, 64);
    assert.equal(one.usage.prompt_tokens, countTextTokens('hello there'));

    const many = await openai.embeddings.create({ model: 'embed-gem', input: DOCS, dimensions: 16 });
    sent = gemini.received.at(-1)!;
    assert.equal(sent.path, '/v1beta/models/gemini-embedding-up:batchEmbedContents');
    assert.equal(sent.body.requests.length, 3);
    assert.equal(sent.body.requests[0].model, 'models/gemini-embedding-up');
    assert.equal(sent.body.requests[0].outputDimensionality, 16);
    assert.deepEqual(
      many.data.map((item) => item.embedding.length),
      [16, 16, 16],
    );
    await assert.rejects(
      openai.embeddings.create({ model: 'embed-gem', input: [[1, 2]] }),
      (error: any) => error.status === 400 && /text inputs only/.test(error.message),
    );
  });

  it('the key’s spend limit holds and its allowed models apply, as on chat', async () => {
    const owner = await server.registerOn('pro');
    const created = await server.call('POST', '/api/keys', {
      key: owner.key,
      body: { name: 'limited', limit_usd: 0.0001, allowed_models: ['embed-priced'] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const limited = created.body.key as string;
    // 100 µUSD allow 7 tokens at 13 µUSD: a long input's hold is refused before the model is called.
    const long = await server.call('POST', '/v1/embeddings', {
      key: limited,
      body: { model: 'embed-priced', input: 'many words in this input '.repeat(4) },
    });
    assert.equal(long.status, 402, JSON.stringify(long.body));
    const fits = await server.call('POST', '/v1/embeddings', {
      key: limited,
      body: { model: 'embed-priced', input: 'hi' },
    });
    assert.equal(fits.status, 200);
    assert.equal(fits.headers.get('x-tollgate-cost-usd'), '0.000013');
    const other = await server.call('POST', '/v1/embeddings', {
      key: limited,
      body: { model: 'embed-a', input: 'hi' },
    });
    assert.equal(other.status, 403, JSON.stringify(other.body));
  });

  it('bad requests are the spec’s errors: chat model, unknown model, empty input, dimensions too large', async () => {
    const cases: [unknown, number, string][] = [
      [{ model: 'model-a', input: 'x' }, 400, 'model'],
      [{ model: 'nope', input: 'x' }, 404, 'model'],
      [{ model: 'embed-a', input: '' }, 400, 'input'],
      [{ model: 'embed-a', input: [] }, 400, 'input'],
      [{ model: 'embed-a', input: [{ text: 'x' }] }, 400, 'input[0]'],
      [{ model: 'embed-a', input: 'x', dimensions: 5000 }, 400, 'dimensions'],
      [{ model: 'embed-a', input: 'x', encoding_format: 'int8' }, 400, 'encoding_format'],
    ];
    for (const [body, status, param] of cases) {
      const answer = await server.call('POST', '/v1/embeddings', { key, body });
      assert.equal(answer.status, status, JSON.stringify(answer.body));
      assert.equal(answer.body.error.param, param);
    }
    const noKey = await server.call('POST', '/v1/embeddings', { body: { model: 'embed-a', input: 'x' } });
    assert.equal(noKey.status, 401);
  });
});
