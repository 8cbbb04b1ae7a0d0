// Prices per kind of token, end to end: fake OpenAI, Anthropic and Gemini upstreams answer with cache reads,
// cache writes and reasoning in their documented usage shapes; the official openai and @anthropic-ai/sdk clients
// read each kind in their protocol's own fields, and the charge is Σ kind × its configured price to the µUSD, on
// SQLite and on PostgreSQL with Redis holds. The simulator's prompt cache makes a repeated long prompt cheaper.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { REDIS_URL, redisUnavailable, testPrefix } from './helpers/redis.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';
import { connectRedis } from '../src/composition/connect-redis.ts';
import { createStore, type Store } from '../src/store/store.ts';
import pino from 'pino';

const silent = pino({ level: 'silent' });

// Each upstream's usage for every answer, in its documented shape.
const OPENAI_USAGE = {
  prompt_tokens: 3_100,
  completion_tokens: 120,
  total_tokens: 3_220,
  prompt_tokens_details: { cached_tokens: 2_944, audio_tokens: 0 },
  completion_tokens_details: {
    reasoning_tokens: 64,
    audio_tokens: 0,
    accepted_prediction_tokens: 0,
    rejected_prediction_tokens: 0,
  },
};
// Anthropic: input_tokens excludes the cache reads and writes reported beside it.
const ANTHROPIC_USAGE = {
  input_tokens: 20,
  cache_creation_input_tokens: 1_100,
  cache_read_input_tokens: 2_000,
  cache_creation: { ephemeral_5m_input_tokens: 800, ephemeral_1h_input_tokens: 300 },
  output_tokens: 40,
  service_tier: 'standard',
};
// Gemini: promptTokenCount includes the cached part; candidatesTokenCount excludes the thoughts.
const GEMINI_USAGE = {
  promptTokenCount: 3_100,
  cachedContentTokenCount: 2_048,
  candidatesTokenCount: 30,
  thoughtsTokenCount: 90,
  totalTokenCount: 3_220,
};

// Published prices, USD per million tokens, and the same in µUSD per million for the expected sums.
const PRICES = {
  'model-b': { input: 2.5, output: 10, cached_input: 1.25 },
  'model-c': { input: 3, output: 15, cached_input: 0.3, cache_write: 3.75, cache_write_1h: 6 },
  'model-a': { input: 1.25, output: 10, cached_input: 0.31 },
} as const;
const micros = (usd: number): number => Math.round(usd * 1_000_000);

/** Σ tokens × price (µUSD per million), rounded up once. */
const charge = (parts: [tokens: number, usdPerMillion: number][]): number =>
  Math.ceil(parts.reduce((sum, [tokens, usd]) => sum + tokens * micros(usd), 0) / 1_000_000);

const EXPECTED = {
  openai: charge([
    [3_100 - 2_944, PRICES['model-b'].input],
    [2_944, PRICES['model-b'].cached_input],
    [120, PRICES['model-b'].output],
  ]),
  anthropic: charge([
    [20, PRICES['model-c'].input],
    [2_000, PRICES['model-c'].cached_input],
    [800, PRICES['model-c'].cache_write],
    [300, PRICES['model-c'].cache_write_1h],
    [40, PRICES['model-c'].output],
  ]),
  gemini: charge([
    [3_100 - 2_048, PRICES['model-a'].input],
    [2_048, PRICES['model-a'].cached_input],
    [30 + 90, PRICES['model-a'].output],
  ]),
};

/** A long, stable system prompt (about 3,000 tokens), as an app sends on every call. */
const SYSTEM = Array.from({ length: 1_000 }, (_, i) => `Rule ${i}: answer briefly.`).join(' ');

/** The Messages request of the caching test, without marks, as the Anthropic upstream has always received it. */
const UNMARKED_WIRE =
  '{"model":"claude-fake","max_tokens":200,"messages":[{"role":"user","content":[{"type":"text","text":"Here is a long document. Summarise it."}]},' +
  '{"role":"assistant","content":[{"type":"text","text":"It is short."}]},{"role":"user","content":[{"type":"text","text":"Hi"}]}],' +
  `"system":"You are terse.${SYSTEM}","temperature":0.7,` +
  '"tools":[{"name":"get_weather","description":"The weather in a city.","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}],' +
  '"tool_choice":{"type":"auto"}}';

interface Fakes {
  url: string;
  bodies: Record<string, unknown>[];
  /** The same bodies as the bytes that arrived. */
  raw: string[];
  close(): Promise<void>;
}

const sse = (res: ServerResponse, events: [string | undefined, unknown][]): void => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const [event, data] of events)
    res.write(
      `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`,
    );
  res.end();
};

/** One HTTP server playing the three upstreams by path, in their documented wire formats. */
async function startFakes(): Promise<Fakes> {
  const bodies: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const handle = (req: IncomingMessage, res: ServerResponse, body: Record<string, unknown>): void => {
    const url = req.url ?? '';
    const stream = body['stream'] === true || url.includes('streamGenerateContent');
    if (url.endsWith('/chat/completions')) {
      const base = {
        id: 'chatcmpl-fake1',
        created: 1_700_000_000,
        model: 'gpt-fake',
        system_fingerprint: 'fp_1',
      };
      if (!stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            ...base,
            object: 'chat.completion',
            choices: [
              {
                index: 0,
                message: { role: 'assistant', content: 'Hello.', refusal: null },
                logprobs: null,
                finish_reason: 'stop',
              },
            ],
            usage: OPENAI_USAGE,
            service_tier: 'default',
          }),
        );
        return;
      }
      const chunk = (choices: unknown[], usage: unknown = null) => ({
        ...base,
        object: 'chat.completion.chunk',
        choices,
        usage,
      });
      sse(res, [
        [
          undefined,
          chunk([
            { index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
          ]),
        ],
        [undefined, chunk([{ index: 0, delta: { content: 'Hello.' }, logprobs: null, finish_reason: null }])],
        [undefined, chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }])],
        [undefined, chunk([], OPENAI_USAGE)],
        [undefined, '[DONE]'],
      ]);
      return;
    }
    if (url.endsWith('/messages')) {
      const message = {
        id: 'msg_fake1',
        type: 'message',
        role: 'assistant',
        model: 'claude-fake',
        stop_sequence: null,
      };
      if (!stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            ...message,
            content: [{ type: 'text', text: 'Hello.' }],
            stop_reason: 'end_turn',
            usage: ANTHROPIC_USAGE,
          }),
        );
        return;
      }
      sse(res, [
        [
          'message_start',
          {
            type: 'message_start',
            message: {
              ...message,
              content: [],
              stop_reason: null,
              usage: { ...ANTHROPIC_USAGE, output_tokens: 1 },
            },
          },
        ],
        [
          'content_block_start',
          { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        ],
        ['ping', { type: 'ping' }],
        [
          'content_block_delta',
          { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello.' } },
        ],
        ['content_block_stop', { type: 'content_block_stop', index: 0 }],
        [
          'message_delta',
          {
            type: 'message_delta',
            delta: { stop_reason: 'end_turn', stop_sequence: null },
            usage: { output_tokens: ANTHROPIC_USAGE.output_tokens },
          },
        ],
        ['message_stop', { type: 'message_stop' }],
      ]);
      return;
    }
    if (url.includes(':generateContent') || url.includes(':streamGenerateContent')) {
      const answer = (text: string, last: boolean) => ({
        candidates: [
          {
            content: { role: 'model', parts: [{ text }] },
            ...(last ? { finishReason: 'STOP' } : {}),
            index: 0,
          },
        ],
        usageMetadata: last ? GEMINI_USAGE : { promptTokenCount: GEMINI_USAGE.promptTokenCount },
        modelVersion: 'gemini-fake',
        responseId: 'resp-fake1',
      });
      if (!stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer('Hello.', true)));
        return;
      }
      sse(res, [
        [undefined, answer('Hel', false)],
        [undefined, answer('lo.', true)],
      ]);
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `no such path ${url}` } }));
  };
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      const text = Buffer.concat(parts).toString('utf8');
      const body = JSON.parse(text || '{}') as Record<string, unknown>;
      bodies.push(body);
      raw.push(text);
      handle(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    raw,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const yamlFor = (fakes: Fakes) => ({
  simulator: { chunk_interval_ms: 0 },
  providers: [
    { id: 'oai', type: 'openai', base_url: `${fakes.url}/v1` },
    { id: 'claude', type: 'anthropic', base_url: fakes.url },
    { id: 'google', type: 'gemini', base_url: `${fakes.url}/v1beta`, api_key_env: 'FAKE_GEMINI_KEY' },
  ],
  models: {
    'model-b': { deployments: [{ provider: 'oai', model: 'gpt-fake' }], price: PRICES['model-b'] },
    'model-c': { deployments: [{ provider: 'claude', model: 'claude-fake' }], price: PRICES['model-c'] },
    'model-a': { deployments: [{ provider: 'google', model: 'gemini-fake' }], price: PRICES['model-a'] },
  },
});

interface Setup {
  name: string;
  skip(): Promise<string | undefined>;
  start(fakes: Fakes): Promise<{ server: TestServer; stop(): Promise<void> }>;
}

const sqlite = BACKENDS.find((b) => b.name === 'sqlite')!;
const postgres = BACKENDS.find((b) => b.name === 'postgres');

const SETUPS: Setup[] = [
  {
    name: 'SQLite',
    skip: async () => undefined,
    async start(fakes) {
      const opened: OpenedBackend = await sqlite.open();
      const server = await startTestServer({
        backend: opened,
        env: { FAKE_GEMINI_KEY: 'gk-fake' },
        yaml: yamlFor(fakes),
      });
      return {
        server,
        async stop() {
          await server.close();
          await opened.cleanup();
        },
      };
    },
  },
  {
    name: 'PostgreSQL + Redis',
    skip: async () => (postgres ? await redisUnavailable() : 'PostgreSQL is not reachable'),
    async start(fakes) {
      const opened = await postgres!.open();
      const prefix = testPrefix();
      const backends = connectRedis(REDIS_URL, 'local', silent, prefix.prefix);
      await backends.ready(2_000);
      const ledgerStore: Store = createStore(opened.reopen());
      const server = await startTestServer({
        backend: opened,
        ownConnection: true,
        env: { FAKE_GEMINI_KEY: 'gk-fake' },
        yaml: yamlFor(fakes),
        extra: { limiter: backends.limiter, bus: backends.bus, holds: backends.holds(ledgerStore.ledger) },
      });
      return {
        server,
        async stop() {
          await server.close();
          await ledgerStore.close();
          await opened.cleanup();
          await prefix.cleanup();
        },
      };
    },
  },
];

for (const setup of SETUPS) {
  const skip = await setup.skip();
  describe(`prices per kind of token on ${setup.name}`, { skip: skip ?? false }, () => {
    let fakes: Fakes;
    let server: TestServer;
    let stop: () => Promise<void>;
    let openai: OpenAI;
    let anthropic: Anthropic;
    let accountId: string;

    before(async () => {
      fakes = await startFakes();
      const started = await setup.start(fakes);
      server = started.server;
      stop = () => started.stop();
      const registered = await server.registerOn('pro');
      accountId = registered.accountId;
      openai = new OpenAI({ apiKey: registered.key, baseURL: `${server.url}/v1`, maxRetries: 0 });
      anthropic = new Anthropic({ apiKey: registered.key, baseURL: server.url, maxRetries: 0 });
    });
    after(async () => {
      await stop?.();
      await fakes?.close();
    });

    /** The stored cost and kinds of a request, once settled. */
    const recorded = async (requestId: string | null) => {
      assert.ok(requestId);
      await server.services.settlements.flush();
      const row = await server.services.store.usage.record(requestId);
      assert.ok(row, `no usage record for ${requestId}`);
      return {
        cost: Number(row['cost_micros']),
        prompt: Number(row['prompt_tokens']),
        completion: Number(row['completion_tokens']),
        cached: Number(row['cached_input_tokens']),
        writes: Number(row['cache_write_tokens']),
        writes1h: Number(row['cache_write_1h_tokens']),
        reasoning: Number(row['reasoning_tokens']),
      };
    };

    it('OpenAI upstream: cached and reasoning tokens reach the chat client and are billed at their prices', async () => {
      const { data, response } = await openai.chat.completions
        .create({
          model: 'model-b',
          messages: [
            { role: 'system', content: SYSTEM },
            { role: 'user', content: 'Hi' },
          ],
          prompt_cache_key: 'my-app-v1',
        })
        .withResponse();
      assert.equal(data.usage?.prompt_tokens, 3_100);
      assert.equal(data.usage?.prompt_tokens_details?.cached_tokens, 2_944);
      assert.equal(data.usage?.completion_tokens_details?.reasoning_tokens, 64);
      assert.equal(fakes.bodies.at(-1)?.['prompt_cache_key'], 'my-app-v1');
      assert.equal(response.headers.get('x-tollgate-cost-usd'), (EXPECTED.openai / 1e6).toFixed(6));
      assert.equal(
        response.headers.get('x-tollgate-cost-breakdown'),
        'input=156:0.00039, cached_input=2944:0.00368, output=120:0.0012, reasoning=64',
      );
      const row = await recorded(response.headers.get('x-request-id'));
      assert.deepEqual(row, {
        cost: EXPECTED.openai,
        prompt: 3_100,
        completion: 120,
        cached: 2_944,
        writes: 0,
        writes1h: 0,
        reasoning: 64,
      });

      // Streamed: the usage chunk carries the details; the same charge.
      const { data: stream, response: streamed } = await openai.chat.completions
        .create({
          model: 'model-b',
          messages: [{ role: 'user', content: 'Hi' }],
          stream: true,
          stream_options: { include_usage: true },
        })
        .withResponse();
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
      assert.equal(usage?.prompt_tokens_details?.cached_tokens, 2_944);
      assert.equal(usage?.completion_tokens_details?.reasoning_tokens, 64);
      assert.equal((await recorded(streamed.headers.get('x-request-id'))).cost, EXPECTED.openai);

      // The Responses door: input_tokens_details and output_tokens_details.
      const { data: answer, response: viaResponses } = await openai.responses
        .create({ model: 'model-b', input: 'Hi', instructions: SYSTEM })
        .withResponse();
      assert.equal(answer.usage?.input_tokens, 3_100);
      assert.equal(answer.usage?.input_tokens_details.cached_tokens, 2_944);
      assert.equal(answer.usage?.output_tokens_details.reasoning_tokens, 64);
      assert.equal((await recorded(viaResponses.headers.get('x-request-id'))).cost, EXPECTED.openai);
    });

    it('Anthropic upstream: cache reads and 5-minute and 1-hour writes, whole and streamed, through both SDKs', async () => {
      const { data: message, response } = await anthropic.messages
        .create({
          model: 'model-c',
          max_tokens: 200,
          system: [{ type: 'text', text: SYSTEM, cache_control: { type: 'ephemeral' } }],
          messages: [{ role: 'user', content: 'Hi' }],
        })
        .withResponse();
      // Anthropic's own convention on the Messages door: input_tokens excludes what the cache read or wrote.
      assert.equal(message.usage.input_tokens, 20);
      assert.equal(message.usage.cache_read_input_tokens, 2_000);
      assert.equal(message.usage.cache_creation_input_tokens, 1_100);
      assert.deepEqual(message.usage.cache_creation, {
        ephemeral_5m_input_tokens: 800,
        ephemeral_1h_input_tokens: 300,
      });
      assert.equal(message.usage.output_tokens, 40);
      assert.equal(response.headers.get('x-tollgate-cost-usd'), (EXPECTED.anthropic / 1e6).toFixed(6));
      assert.equal(
        response.headers.get('x-tollgate-cost-breakdown'),
        'input=20:0.00006, cached_input=2000:0.0006, cache_write=800:0.003, cache_write_1h=300:0.0018, output=40:0.0006',
      );
      assert.deepEqual(await recorded(response.headers.get('x-request-id')), {
        cost: EXPECTED.anthropic,
        prompt: 3_120,
        completion: 40,
        cached: 2_000,
        writes: 1_100,
        writes1h: 300,
        reasoning: 0,
      });

      const stream = anthropic.messages.stream({
        model: 'model-c',
        max_tokens: 200,
        messages: [{ role: 'user', content: 'Hi' }],
      });
      const final = await stream.finalMessage();
      assert.equal(final.usage.cache_read_input_tokens, 2_000);
      assert.equal(final.usage.cache_creation_input_tokens, 1_100);
      assert.equal(final.usage.output_tokens, 40);

      // The chat door on OpenAI's convention: the prompt counts every token, the details say which were cached.
      const { data, response: viaChat } = await openai.chat.completions
        .create({ model: 'model-c', messages: [{ role: 'user', content: 'Hi' }] })
        .withResponse();
      assert.equal(data.usage?.prompt_tokens, 3_120);
      assert.equal(data.usage?.prompt_tokens_details?.cached_tokens, 2_000);
      assert.equal((await recorded(viaChat.headers.get('x-request-id'))).cost, EXPECTED.anthropic);
    });

    it('Gemini upstream: cached content and thoughts, whole and streamed', async () => {
      const { data, response } = await openai.chat.completions
        .create({ model: 'model-a', messages: [{ role: 'user', content: 'Hi' }] })
        .withResponse();
      assert.equal(data.usage?.prompt_tokens, 3_100);
      assert.equal(data.usage?.completion_tokens, 120);
      assert.equal(data.usage?.prompt_tokens_details?.cached_tokens, 2_048);
      assert.equal(data.usage?.completion_tokens_details?.reasoning_tokens, 90);
      assert.equal(response.headers.get('x-tollgate-cost-usd'), (EXPECTED.gemini / 1e6).toFixed(6));
      assert.equal(
        response.headers.get('x-tollgate-cost-breakdown'),
        'input=1052:0.001315, cached_input=2048:0.00063488, output=120:0.0012, reasoning=90',
      );
      assert.deepEqual(await recorded(response.headers.get('x-request-id')), {
        cost: EXPECTED.gemini,
        prompt: 3_100,
        completion: 120,
        cached: 2_048,
        writes: 0,
        writes1h: 0,
        reasoning: 90,
      });
      const { data: stream, response: streamed } = await openai.chat.completions
        .create({
          model: 'model-a',
          messages: [{ role: 'user', content: 'Hi' }],
          stream: true,
          stream_options: { include_usage: true },
        })
        .withResponse();
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
      assert.equal(usage?.prompt_tokens_details?.cached_tokens, 2_048);
      assert.equal(usage?.completion_tokens_details?.reasoning_tokens, 90);
      assert.equal((await recorded(streamed.headers.get('x-request-id'))).cost, EXPECTED.gemini);
    });

    it('/api/usage and /v1/models tell the kinds and their prices', async () => {
      await server.services.settlements.flush();
      const summary = await server.services.usage.summary(accountId, { groupBy: 'model' });
      const byModel = new Map(summary.rows.map((row) => [row.group, row]));
      assert.equal(byModel.get('model-b')?.cachedInputTokens, 3 * 2_944);
      assert.equal(byModel.get('model-c')?.cacheWriteTokens, 3 * 1_100);
      assert.equal(byModel.get('model-c')?.cacheWrite1hTokens, 3 * 300);
      assert.equal(byModel.get('model-a')?.reasoningTokens, 2 * 90);
      assert.equal(byModel.get('model-c')?.costMicros, 3 * EXPECTED.anthropic);
      const models = await openai.models.list();
      const claude = models.data.find((m) => m.id === 'model-c') as unknown as {
        pricing: Record<string, number>;
      };
      assert.deepEqual(claude.pricing, {
        input_usd_per_million: 3,
        output_usd_per_million: 15,
        cached_input_usd_per_million: 0.3,
        cache_write_usd_per_million: 3.75,
        cache_write_1h_usd_per_million: 6,
      });
    });

    it('the simulator: the same long prompt twice costs less the second time', async () => {
      const ask = () =>
        openai.chat.completions
          .create({
            model: 'model-d',
            messages: [
              { role: 'system', content: SYSTEM },
              { role: 'user', content: 'What is rule 7?' },
            ],
          })
          .withResponse();
      const first = await ask();
      const second = await ask();
      assert.equal(first.data.usage?.prompt_tokens_details?.cached_tokens ?? 0, 0);
      const cached = second.data.usage?.prompt_tokens_details?.cached_tokens ?? 0;
      assert.ok(cached >= 1_024 && cached % 128 === 0, `cached ${cached}`);
      // model-d reasons: its hidden reasoning is reported and billed as output.
      assert.ok((second.data.usage?.completion_tokens_details?.reasoning_tokens ?? 0) > 0);
      const firstCost = Number(first.response.headers.get('x-tollgate-cost-usd'));
      const secondCost = Number(second.response.headers.get('x-tollgate-cost-usd'));
      assert.ok(secondCost < firstCost, `${secondCost} < ${firstCost}`);
      const [a, b] = [
        await recorded(first.response.headers.get('x-request-id')),
        await recorded(second.response.headers.get('x-request-id')),
      ];
      assert.equal(b.cached, cached);
      assert.ok(b.cost < a.cost);
    });

    it('prompt caching: cache_control marks reach the Anthropic upstream where they were put, and only there', async () => {
      const weather: Anthropic.Tool = {
        name: 'get_weather',
        description: 'The weather in a city.',
        input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      };
      const ask = (marked: boolean) =>
        anthropic.messages
          .create({
            model: 'model-c',
            max_tokens: 200,
            system: [
              { type: 'text', text: 'You are terse.' },
              {
                type: 'text',
                text: SYSTEM,
                ...(marked ? { cache_control: { type: 'ephemeral', ttl: '1h' } } : {}),
              },
            ],
            tools: [{ ...weather, ...(marked ? { cache_control: { type: 'ephemeral', ttl: '1h' } } : {}) }],
            messages: [
              {
                role: 'user',
                content: [
                  { type: 'text', text: 'Here is a long document. ' },
                  {
                    type: 'text',
                    text: 'Summarise it.',
                    ...(marked ? { cache_control: { type: 'ephemeral' } } : {}),
                  },
                ],
              },
              { role: 'assistant', content: 'It is short.' },
              { role: 'user', content: 'Hi' },
            ],
          })
          .withResponse();

      // Without marks the wire body is what it always was.
      await ask(false);
      assert.equal(fakes.raw.at(-1), UNMARKED_WIRE);

      const { data: message, response } = await ask(true);
      const wire = fakes.bodies.at(-1)!;
      assert.deepEqual(wire['system'], [
        { type: 'text', text: 'You are terse.' },
        { type: 'text', text: SYSTEM, cache_control: { type: 'ephemeral', ttl: '1h' } },
      ]);
      assert.deepEqual(wire['tools'], [{ ...weather, cache_control: { type: 'ephemeral', ttl: '1h' } }]);
      assert.deepEqual(wire['messages'], [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Here is a long document. ' },
            { type: 'text', text: 'Summarise it.', cache_control: { type: 'ephemeral' } },
          ],
        },
        { role: 'assistant', content: [{ type: 'text', text: 'It is short.' }] },
        { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      ]);
      // The upstream answers with cache writes and reads; the charge is Σ kind × published price.
      assert.equal(message.usage.cache_creation_input_tokens, 1_100);
      assert.equal(message.usage.cache_read_input_tokens, 2_000);
      assert.equal(response.headers.get('x-tollgate-cost-usd'), (EXPECTED.anthropic / 1e6).toFixed(6));
      assert.equal((await recorded(response.headers.get('x-request-id'))).cost, EXPECTED.anthropic);

      // A mark on a tool_result block comes back on the tool_result block.
      await anthropic.messages.create({
        model: 'model-c',
        max_tokens: 200,
        tools: [weather],
        messages: [
          { role: 'user', content: 'Weather in Oslo?' },
          {
            role: 'assistant',
            content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }],
          },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 'toolu_1',
                content: 'Sunny.',
                cache_control: { type: 'ephemeral' },
              },
              { type: 'text', text: 'And tomorrow?' },
            ],
          },
        ],
      });
      assert.deepEqual((fakes.bodies.at(-1)?.['messages'] as unknown[]).at(-1), {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_1',
            content: 'Sunny.',
            cache_control: { type: 'ephemeral' },
          },
          { type: 'text', text: 'And tomorrow?' },
        ],
      });

      // Streamed, the marks travel the same way.
      await anthropic.messages
        .stream({
          model: 'model-c',
          max_tokens: 200,
          system: [{ type: 'text', text: SYSTEM, cache_control: { type: 'ephemeral' } }],
          messages: [{ role: 'user', content: 'Hi' }],
        })
        .finalMessage();
      assert.deepEqual(fakes.bodies.at(-1)?.['system'], [
        { type: 'text', text: SYSTEM, cache_control: { type: 'ephemeral' } },
      ]);

      // The chat door takes marks on content parts and tools (OpenRouter's convention) to the same places.
      const marked = {
        messages: [
          {
            role: 'system' as const,
            content: [{ type: 'text' as const, text: SYSTEM, cache_control: { type: 'ephemeral' } }],
          },
          { role: 'user' as const, content: 'Hi' },
        ],
        tools: [
          {
            type: 'function' as const,
            function: { name: 'get_weather', parameters: weather.input_schema },
            cache_control: { type: 'ephemeral', ttl: '5m' },
          },
        ],
      } as unknown as Pick<OpenAI.ChatCompletionCreateParamsNonStreaming, 'messages' | 'tools'>;
      const { response: viaChat } = await openai.chat.completions
        .create({ model: 'model-c', ...marked })
        .withResponse();
      const chatWire = fakes.bodies.at(-1)!;
      assert.deepEqual(chatWire['system'], [
        { type: 'text', text: SYSTEM, cache_control: { type: 'ephemeral' } },
      ]);
      assert.deepEqual((chatWire['tools'] as Record<string, unknown>[])[0]?.['cache_control'], {
        type: 'ephemeral',
        ttl: '5m',
      });
      assert.equal((await recorded(viaChat.headers.get('x-request-id'))).cost, EXPECTED.anthropic);

      // An OpenAI-type upstream never sees cache_control, whole or streamed, from either door.
      await openai.chat.completions.create({ model: 'model-b', ...marked });
      assert.doesNotMatch(fakes.raw.at(-1)!, /cache_control/);
      const stream = await openai.chat.completions.create({ model: 'model-b', ...marked, stream: true });
      for await (const chunk of stream) void chunk;
      assert.doesNotMatch(fakes.raw.at(-1)!, /cache_control/);
      await anthropic.messages.create({
        model: 'model-b',
        max_tokens: 200,
        system: [{ type: 'text', text: SYSTEM, cache_control: { type: 'ephemeral' } }],
        tools: [{ ...weather, cache_control: { type: 'ephemeral' } }],
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral' } }] },
        ],
      });
      assert.doesNotMatch(fakes.raw.at(-1)!, /cache_control/);

      // A mark of an unknown kind is the client's 400, in Anthropic's error shape.
      await assert.rejects(
        anthropic.messages.create({
          model: 'model-c',
          max_tokens: 200,
          system: [{ type: 'text', text: 'x', cache_control: { type: 'forever' } as never }],
          messages: [{ role: 'user', content: 'Hi' }],
        }),
        (error: unknown) => error instanceof Anthropic.BadRequestError,
      );
    });
  });
}
