import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { createTestClock } from './helpers/clock.ts';
import { startFakeOpenAI } from '../src/providers/openai/fake-openai.ts';
import { startFakeAnthropic } from '../src/providers/anthropic/fake-anthropic.ts';
import type { FakeUpstream } from '../src/providers/fake-upstream.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

const hi = [{ role: 'user' as const, content: 'hi' }];

describe('the client contract the official SDKs depend on', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let primary: FakeUpstream;
  let secondary: FakeUpstream;
  let claude: FakeUpstream;
  let key: string;
  let client: OpenAI;
  const time = createTestClock(Date.parse('2026-11-23T10:00:00Z'));

  before(async () => {
    opened = await BACKENDS[0]!.open();
    [primary, secondary, claude] = await Promise.all([
      startFakeOpenAI(),
      startFakeOpenAI(),
      startFakeAnthropic(),
    ]);
    server = await startTestServer({
      backend: opened,
      clock: time.clock,
      yaml: {
        providers: [
          { id: 'primary', type: 'openai', base_url: primary.url },
          { id: 'secondary', type: 'openai', base_url: secondary.url },
          { id: 'claude', type: 'anthropic', base_url: claude.url },
        ],
        simulator: { chunk_interval_ms: 0, first_token_ms: 0 },
        models: {
          'model-a': {
            deployments: [
              { provider: 'primary', model: 'strict-a', params: { deny: ['logit_bias'] } },
              { provider: 'secondary', model: 'lenient-a' },
            ],
          },
          'model-b': {
            deployments: [
              {
                provider: 'primary',
                model: 'reasoner',
                params: {
                  drop: ['temperature'],
                  rename: { max_tokens: 'max_completion_tokens' },
                  defaults: { reasoning_effort: 'low' },
                },
              },
            ],
          },
          'model-c': {
            deployments: [
              {
                provider: 'primary',
                model: 'warm',
                params: { defaults: { temperature: 1 }, drop: ['store'] },
              },
            ],
          },
          'model-d': {
            deployments: [
              { provider: 'primary', model: 'strict-d', params: { allow: ['max_tokens'], unlisted: 'drop' } },
            ],
          },
          'model-e': { deployments: [{ provider: 'primary', model: 'plain' }] },
          'model-thinker': {
            price: { single: 1 },
            context_window: 100_000,
            deployments: [{ provider: 'claude', model: 'claude-test', params: { drop: ['temperature'] } }],
          },
          'model-tempered': {
            price: { single: 1 },
            context_window: 100_000,
            deployments: [
              { provider: 'claude', model: 'claude-test', params: { defaults: { temperature: 0.4 } } },
            ],
          },
        },
      },
    });
    const registered = await server.registerOn('pro');
    key = registered.key;
    client = new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 });
  });
  after(async () => {
    await server?.close();
    await Promise.all([primary?.close(), secondary?.close(), claude?.close()]);
    await opened?.cleanup();
  });

  /** What the upstream received for the one request the callback makes. */
  const sentUpstream = async (upstream: FakeUpstream, ask: () => Promise<unknown>): Promise<any> => {
    const before = upstream.received.length;
    await ask();
    assert.equal(upstream.received.length, before + 1, 'one upstream call');
    return upstream.received.at(-1)!.body;
  };

  describe('rate-limit headers', () => {
    it('a 429 carries the x-ratelimit-* headers of a 200, with the real time until room frees', async () => {
      const { key: trialKey } = await server.register();
      const ask = () =>
        server.call('POST', '/v1/chat/completions', {
          key: trialKey,
          body: { model: 'model-f', messages: hi },
        });
      const start = time.now;
      const first = await ask();
      assert.equal(first.status, 200);
      assert.equal(first.headers.get('x-ratelimit-limit-requests'), '10');
      assert.equal(first.headers.get('x-ratelimit-remaining-requests'), '9');
      assert.equal(first.headers.get('x-ratelimit-reset-requests'), '1m0s');
      assert.equal(first.headers.get('x-ratelimit-limit-tokens'), '50000');
      time.advance(20_000);
      const second = await ask();
      assert.equal(second.headers.get('x-ratelimit-remaining-requests'), '8');
      assert.equal(
        second.headers.get('x-ratelimit-reset-requests'),
        '40s',
        'the first request leaves in 40 s',
      );
      assert.equal(second.headers.get('x-ratelimit-reset-tokens'), '40s');
      for (let i = 0; i < 8; i++) assert.equal((await ask()).status, 200);
      time.now = start + 53_500;
      const refused = await ask();
      assert.equal(refused.status, 429);
      assert.equal(refused.body.error.code, 'rate_limit_exceeded');
      assert.equal(refused.body.error.type, 'rate_limit_error');
      assert.equal(refused.body.error.param, null);
      assert.equal(refused.headers.get('retry-after'), '7');
      assert.equal(refused.headers.get('retry-after-ms'), '6500');
      assert.equal(refused.headers.get('x-ratelimit-limit-requests'), '10');
      assert.equal(refused.headers.get('x-ratelimit-remaining-requests'), '0');
      assert.equal(refused.headers.get('x-ratelimit-reset-requests'), '6.5s');
      assert.equal(refused.headers.get('x-ratelimit-limit-tokens'), '50000');
      assert.ok(Number(refused.headers.get('x-ratelimit-remaining-tokens')) < 50_000);
      assert.equal(refused.headers.get('x-ratelimit-reset-tokens'), '6.5s');
      time.now = start + 60_000;
      assert.equal((await ask()).status, 200, 'waiting the reset time is enough');
    });

    it('the SDK sees the 429 as a RateLimitError with the same headers', async () => {
      const { key: trialKey } = await server.register();
      const trial = new OpenAI({ apiKey: trialKey, baseURL: `${server.url}/v1`, maxRetries: 0 });
      for (let i = 0; i < 10; i++) await trial.chat.completions.create({ model: 'model-f', messages: hi });
      const error = await trial.chat.completions.create({ model: 'model-f', messages: hi }).then(
        () => assert.fail('expected a 429'),
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof OpenAI.RateLimitError);
      assert.equal(error.code, 'rate_limit_exceeded');
      assert.equal(error.headers?.get('x-ratelimit-remaining-requests'), '0');
      assert.equal(error.headers?.get('x-ratelimit-reset-requests'), '1m0s');
      assert.equal(error.headers?.get('retry-after'), '60');
    });
  });

  describe('models', () => {
    it('models.retrieve returns the OpenAI model object', async () => {
      const model = await client.models.retrieve('model-a');
      assert.equal(model.id, 'model-a');
      assert.equal(model.object, 'model');
      assert.equal(typeof model.created, 'number');
      assert.equal(typeof model.owned_by, 'string');
      const listed = await client.models.list();
      assert.deepEqual(
        listed.data.find((entry) => entry.id === 'model-a'),
        model,
        'the same object the list holds',
      );
    });

    it('an unknown model id is 404 model_not_found', async () => {
      const error = await client.models.retrieve('model-z').then(
        () => assert.fail('expected a 404'),
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof OpenAI.NotFoundError);
      assert.equal(error.code, 'model_not_found');
      assert.equal(error.param, 'model');
      assert.equal(error.type, 'invalid_request_error');
    });
  });

  describe('the per-deployment parameter policy', () => {
    it('a reasoning deployment gets no temperature, max_completion_tokens and its default effort', async () => {
      const sent = await sentUpstream(primary, () =>
        client.chat.completions.create({ model: 'model-b', messages: hi, temperature: 1.3, max_tokens: 40 }),
      );
      assert.equal(sent.model, 'reasoner');
      assert.equal('temperature' in sent, false);
      assert.equal('max_tokens' in sent, false);
      assert.equal(sent.max_completion_tokens, 40);
      assert.equal(sent.reasoning_effort, 'low');
    });

    it('the policy shapes streamed calls the same way', async () => {
      const sent = await sentUpstream(primary, async () => {
        const stream = await client.chat.completions.create({
          model: 'model-b',
          messages: hi,
          stream: true,
          max_tokens: 30,
        });
        for await (const chunk of stream) void chunk;
      });
      assert.equal('temperature' in sent, false);
      assert.equal(sent.max_completion_tokens, 30);
      assert.equal(sent.stream, true);
      assert.deepEqual(sent.stream_options, { include_usage: true });
    });

    it('a deployment default replaces the spec’s temperature, and a dropped field never leaves', async () => {
      const sent = await sentUpstream(primary, () =>
        client.chat.completions.create({ model: 'model-c', messages: hi, store: true }),
      );
      assert.equal(sent.temperature, 1);
      assert.equal('store' in sent, false);
      const chosen = await sentUpstream(primary, () =>
        client.chat.completions.create({ model: 'model-c', messages: hi, temperature: 0.1 }),
      );
      assert.equal(chosen.temperature, 0.1, 'the client’s value wins over a default');
    });

    it('without a policy: the spec’s 0.7, unknown fields pass, cost-bearing ones are refused naming the field', async () => {
      const sent = await sentUpstream(primary, () =>
        client.chat.completions.create({
          model: 'model-e',
          messages: hi,
          seed: 3,
          metadata: { team: 'a' },
          // A field the SDK does not know, sent as clients send them.
          ...({ vendor_flag: true } as object),
        }),
      );
      assert.equal(sent.temperature, 0.7);
      assert.equal(sent.seed, 3);
      assert.deepEqual(sent.metadata, { team: 'a' });
      assert.equal(sent.vendor_flag, true);
      for (const [field, value] of [
        ['service_tier', 'priority'],
        ['store', true],
        ['web_search_options', {}],
        ['modalities', ['text', 'audio']],
      ] as const) {
        const before = primary.received.length;
        const error = await client.chat.completions
          .create({ model: 'model-e', messages: hi, ...({ [field]: value } as object) })
          .then(
            () => assert.fail(`expected ${field} to be refused`),
            (caught: unknown) => caught,
          );
        assert.ok(error instanceof OpenAI.BadRequestError, field);
        assert.equal(error.code, 'invalid_request');
        assert.equal(error.param, field);
        assert.match(error.message, new RegExp(`${field} is not accepted for model-e`));
        assert.equal(primary.received.length, before, 'nothing reached the upstream');
        assert.ok(error.requestID, 'the answer has an x-request-id');
        await server.services.settlements.flush();
        const record: any = await opened.db.get('SELECT * FROM usage_records WHERE request_id = $1', [
          error.requestID,
        ]);
        assert.equal(record.cost_micros, 0, 'nothing is charged');
      }
    });

    it('allow-list mode sends only the listed fields', async () => {
      const sent = await sentUpstream(primary, () =>
        client.chat.completions.create({
          model: 'model-d',
          messages: hi,
          max_tokens: 9,
          seed: 1,
          top_p: 0.5,
        }),
      );
      assert.deepEqual(Object.keys(sent).sort(), ['max_tokens', 'messages', 'model', 'stream']);
    });

    it('an Anthropic deployment follows the policy for temperature too', async () => {
      const dropped = await sentUpstream(claude, () =>
        client.chat.completions.create({ model: 'model-thinker', messages: hi, temperature: 0.9 }),
      );
      assert.equal(dropped.model, 'claude-test');
      assert.equal('temperature' in dropped, false);
      const defaulted = await sentUpstream(claude, () =>
        client.chat.completions.create({ model: 'model-tempered', messages: hi }),
      );
      assert.equal(defaulted.temperature, 0.4);
    });

    it('a field one deployment refuses goes to another that accepts it, whatever the weighted order', async () => {
      for (let i = 0; i < 6; i++) {
        const sent = await sentUpstream(secondary, () =>
          client.chat.completions.create({ model: 'model-a', messages: hi, logit_bias: { '1': 1 } }),
        );
        assert.equal(sent.model, 'lenient-a');
        assert.deepEqual(sent.logit_bias, { '1': 1 });
      }
    });
  });

  describe('error bodies', () => {
    it('a field error names the field in param, and the role message lists every accepted role', async () => {
      const badRole = await server.call('POST', '/v1/chat/completions', {
        key,
        body: { model: 'model-e', messages: [{ role: 'robot', content: 'hi' }] },
      });
      assert.equal(badRole.status, 400);
      assert.deepEqual(badRole.body, {
        error: {
          code: 'invalid_request',
          message: 'messages[0].role must be one of system, developer, user, assistant, tool',
          type: 'invalid_request_error',
          param: 'messages[0].role',
        },
      });
      const hot = await client.chat.completions
        .create({ model: 'model-e', messages: hi, temperature: 2.5 })
        .then(
          () => assert.fail('expected a 400'),
          (caught: unknown) => caught,
        );
      assert.ok(hot instanceof OpenAI.BadRequestError);
      assert.equal(hot.param, 'temperature');
      const cases: [Record<string, unknown> | unknown[], string | null][] = [
        [{ model: 'model-e', messages: hi, top_p: 3 }, 'top_p'],
        [{ model: 'model-e', messages: hi, n: 9 }, 'n'],
        [
          { model: 'model-e', messages: hi, stream: true, stream_options: { include_usage: 1 } },
          'stream_options.include_usage',
        ],
        [{ model: 'model-e', messages: hi, max_completion_tokens: 0 }, 'max_completion_tokens'],
        [
          { model: 'model-e', messages: [{ role: 'user', content: [{ type: 'image_url' }] }] },
          'messages[0].content[0]',
        ],
        [
          { model: 'model-e', messages: hi, tools: [{ type: 'function', function: { name: 'a b' } }] },
          'tools[0].function.name',
        ],
        [{ model: 'model-e', messages: hi, tool_choice: 'required' }, 'tool_choice'],
        [{ model: 'model-e', messages: [] }, 'messages'],
        [{ messages: hi }, 'model'],
        [['not', 'an', 'object'], null],
      ];
      for (const [body, param] of cases) {
        const response = await server.call('POST', '/v1/chat/completions', { key, body });
        assert.equal(response.status, 400, JSON.stringify(body));
        assert.equal(response.body.error.param, param, response.body.error.message);
      }
      const noKey = await server.call('GET', '/api/account');
      assert.equal(noKey.status, 401);
      assert.equal(noKey.body.error.param, null, 'null when no one field is at fault');
    });

    it('a developer message is accepted and reaches the upstream as sent', async () => {
      const sent = await sentUpstream(primary, () =>
        client.chat.completions.create({
          model: 'model-e',
          messages: [
            { role: 'developer', content: 'be brief' },
            { role: 'user', content: 'hi' },
          ],
        }),
      );
      assert.equal(sent.messages[0].role, 'developer');
    });
  });
});
