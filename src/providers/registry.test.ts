import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chatRequestOf } from '../core/testing.ts';
import { createProvider } from './create-provider.ts';
import { PROVIDER_TYPES, PROVIDERS, providerPlugin } from './registry.ts';

const TIMEOUTS = { connectMs: 1_000, firstByteMs: 1_000, idleStreamMs: 1_000 };

describe('provider registry', () => {
  it('lists each plug-in once, by its type', () => {
    assert.deepEqual(PROVIDER_TYPES, ['openai', 'anthropic', 'gemini', 'simulator']);
    for (const plugin of PROVIDERS) assert.equal(providerPlugin(plugin.type), plugin);
    assert.equal(providerPlugin('grpc'), undefined);
  });

  it('an HTTP plug-in takes base_url, api_key_env and headers, and resolves the key from the environment', () => {
    const settings = providerPlugin('anthropic')!
      .settingsSchema({ CLAUDE_KEY: 'sk-ant' })
      .parse({ base_url: 'https://api.anthropic.com/', api_key_env: 'CLAUDE_KEY', headers: { 'x-a': 'b' } });
    assert.deepEqual(settings, {
      baseUrl: 'https://api.anthropic.com',
      apiKey: 'sk-ant',
      headers: { 'x-a': 'b' },
      options: {},
    });
  });

  it('each plug-in owns its options: the simulator’s pacing is unknown to the others, and theirs to it', () => {
    const openai = providerPlugin('openai')!.settingsSchema({});
    const refused = openai.safeParse({ base_url: 'https://x', chunk_interval_ms: 5 });
    assert.equal(refused.success, false);
    assert.deepEqual(refused.error?.issues[0]?.code, 'unrecognized_keys');
    const simulator = providerPlugin('simulator')!.settingsSchema({});
    assert.deepEqual(simulator.parse({ chunk_interval_ms: 5 }).options, {
      chunkIntervalMs: 5,
      firstTokenMs: 0,
    });
    assert.equal(simulator.safeParse({ base_url: 'https://x' }).success, false);
  });

  it('createProvider builds the adapter its type’s plug-in makes', async () => {
    const simulator = createProvider(
      {
        id: 'local',
        type: 'simulator',
        baseUrl: 'simulator://local',
        apiKey: undefined,
        headers: {},
        options: { chunkIntervalMs: 0, firstTokenMs: 0 },
      },
      TIMEOUTS,
    );
    assert.equal(simulator.id, 'local');
    const answer = await simulator.complete({
      request: chatRequestOf({ messages: [{ role: 'user', content: 'hello' }], maxTokens: 5 }),
      upstreamModel: 'model-b',
      signal: new AbortController().signal,
      defaultMaxTokens: 5,
    });
    assert.equal(answer.usage?.completion_tokens, 5);
    const openai = createProvider(
      {
        id: 'up',
        type: 'openai',
        baseUrl: 'http://127.0.0.1:9/v1',
        apiKey: undefined,
        headers: {},
        options: {},
      },
      TIMEOUTS,
    );
    assert.equal(openai.id, 'up');
    await openai.close();
    await simulator.close();
  });
});
