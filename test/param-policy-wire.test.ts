import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startFakeOpenAI } from '../src/providers/openai/fake-openai.ts';
import { startFakeAnthropic } from '../src/providers/anthropic/fake-anthropic.ts';
import { type FakeGemini, startFakeGemini } from '../src/providers/gemini/fake-gemini.ts';
import type { FakeUpstream } from '../src/providers/fake-upstream.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

const GEMINI_KEY = 'gemini-policy-key';
const hi = [{ role: 'user' as const, content: 'hi' }];

/** One deployment policy of each kind, the same on all three upstream types. */
const SHAPED = {
  deny: ['seed'],
  drop: ['top_p', 'stop'],
  rename: { max_tokens: 'max_completion_tokens' },
  defaults: { temperature: 0.25 },
};
/** A rename to a name no translating adapter knows, and a default under the other name of the same field. */
const RENAMED_AWAY = {
  rename: { max_tokens: 'length_hint' },
  defaults: { max_completion_tokens: 21 },
};
const UPSTREAMS = ['openai', 'claude', 'gemini'] as const;

/**
 * A deployment's parameter policy shapes the one form of the request before any adapter translates it: the
 * wire body each fake upstream records shows drop, rename, defaults and deny on OpenAI-type, Anthropic and
 * Gemini upstreams alike, for whole answers and streams.
 */
describe('the parameter policy on every upstream type’s wire', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let client: OpenAI;
  let key: string;
  let openai: FakeUpstream;
  let claude: FakeUpstream;
  let gemini: FakeGemini;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    [openai, claude, gemini] = await Promise.all([
      startFakeOpenAI(),
      startFakeAnthropic(),
      startFakeGemini(GEMINI_KEY),
    ]);
    const models: Record<string, unknown> = {};
    for (const upstream of UPSTREAMS) {
      const model = { openai: 'gpt-test', claude: 'claude-test', gemini: 'gemini-test' }[upstream];
      for (const [name, params] of [
        ['shaped', SHAPED],
        ['renamed', RENAMED_AWAY],
      ] as const)
        models[`${name}-${upstream}`] = {
          price: { single: 1 },
          context_window: 100_000,
          deployments: [{ provider: upstream, model, params }],
        };
    }
    server = await startTestServer({
      backend: opened,
      env: { FAKE_GEMINI_KEY: GEMINI_KEY },
      yaml: {
        providers: [
          { id: 'openai', type: 'openai', base_url: openai.url },
          { id: 'claude', type: 'anthropic', base_url: claude.url },
          { id: 'gemini', type: 'gemini', base_url: gemini.url, api_key_env: 'FAKE_GEMINI_KEY' },
        ],
        models,
      },
    });
    key = (await server.registerOn('pro')).key;
    client = new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 });
  });
  after(async () => {
    await server?.close();
    await Promise.all([openai?.close(), claude?.close(), gemini?.close()]);
    await opened?.cleanup();
  });

  const upstreamOf = (upstream: (typeof UPSTREAMS)[number]): { received: { body: any }[] } =>
    ({ openai, claude, gemini })[upstream];

  /** The wire body of the one upstream call `ask` makes. */
  const sentTo = async (
    upstream: (typeof UPSTREAMS)[number],
    ask: () => Promise<unknown>,
  ): Promise<Record<string, any>> => {
    const { received } = upstreamOf(upstream);
    const before = received.length;
    await ask();
    assert.equal(received.length, before + 1, 'one upstream call');
    return received.at(-1)!.body;
  };

  const whole =
    (model: string, extra: Record<string, unknown> = {}) =>
    () =>
      client.chat.completions.create({ model, messages: hi, ...extra });
  const streamed =
    (model: string, extra: Record<string, unknown> = {}) =>
    async () => {
      const stream = await client.chat.completions.create({ model, messages: hi, stream: true, ...extra });
      for await (const chunk of stream) void chunk;
    };

  for (const [how, ask] of [
    ['a whole answer', whole],
    ['a stream', streamed],
  ] as const) {
    describe(how, () => {
      it('OpenAI-type: top_p and stop dropped, max_tokens renamed, temperature defaulted', async () => {
        const sent = await sentTo(
          'openai',
          ask('shaped-openai', { top_p: 0.5, stop: ['x'], max_tokens: 33 }),
        );
        assert.equal('top_p' in sent, false);
        assert.equal('stop' in sent, false);
        assert.equal('max_tokens' in sent, false);
        assert.equal(sent['max_completion_tokens'], 33);
        assert.equal(sent['temperature'], 0.25);
      });

      it('Anthropic: no top_p, no stop_sequences; the renamed max_tokens arrives as its max_tokens', async () => {
        const sent = await sentTo(
          'claude',
          ask('shaped-claude', { top_p: 0.5, stop: ['x'], max_tokens: 33 }),
        );
        assert.equal('top_p' in sent, false);
        assert.equal('stop_sequences' in sent, false);
        assert.equal(sent['max_tokens'], 33);
        assert.equal(sent['temperature'], 0.25);
      });

      it('Gemini: no topP, no stopSequences; the renamed max_tokens arrives as maxOutputTokens', async () => {
        const sent = await sentTo(
          'gemini',
          ask('shaped-gemini', { top_p: 0.5, stop: ['x'], max_tokens: 33 }),
        );
        assert.deepEqual(sent['generationConfig'], { temperature: 0.25, maxOutputTokens: 33 });
      });

      it('a rename to a name an adapter does not translate takes the value off a translated wire', async () => {
        const openaiSent = await sentTo('openai', ask('renamed-openai', { max_tokens: 33 }));
        assert.equal('max_tokens' in openaiSent, false);
        assert.equal(openaiSent['length_hint'], 33);
        assert.equal(openaiSent['max_completion_tokens'], 21, 'the default fills the field left unset');
        const claudeSent = await sentTo('claude', ask('renamed-claude', { max_tokens: 33 }));
        assert.equal(claudeSent['max_tokens'], 21);
        assert.equal('length_hint' in claudeSent, false);
        const geminiSent = await sentTo('gemini', ask('renamed-gemini', { max_tokens: 33 }));
        assert.equal(geminiSent['generationConfig']['maxOutputTokens'], 21);
      });
    });
  }

  it('a denied field is a 400 naming it on every upstream type, and no upstream is called', async () => {
    const before = UPSTREAMS.map((upstream) => upstreamOf(upstream).received.length);
    for (const upstream of UPSTREAMS) {
      const refused = await server.call('POST', '/v1/chat/completions', {
        key,
        body: { model: `shaped-${upstream}`, messages: hi, seed: 1 },
      });
      assert.equal(refused.status, 400, upstream);
      assert.equal(refused.body.error.code, 'invalid_request', upstream);
      assert.equal(refused.body.error.param, 'seed', upstream);
    }
    assert.deepEqual(
      UPSTREAMS.map((upstream) => upstreamOf(upstream).received.length),
      before,
    );
  });
});
