import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import type { FakeUpstream } from '../src/providers/fake-upstream.ts';
import { startFakeOpenAI } from '../src/providers/openai/fake-openai.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';

// A model's state on /status follows its deployments' health as the gateway measured it: no upstream is called.
describe('the status page follows deployment health', () => {
  let opened: OpenedBackend;
  let upstream: FakeUpstream;
  let server: TestServer;
  let key: string;
  let otherKey: string;
  before(async () => {
    opened = await BACKENDS[0]!.open();
    upstream = await startFakeOpenAI();
    server = await startTestServer({
      backend: opened,
      extra: { statusRefreshMs: 0 },
      yaml: {
        providers: [{ id: 'fake', type: 'openai', base_url: upstream.url }],
        models: {
          'model-b': { deployments: [{ provider: 'fake', model: 'up-b' }] },
          'model-c': { deployments: [{ provider: 'fake', model: 'up-c' }] },
        },
        routing: {
          max_attempts: 1,
          retry_base_ms: 10,
          breaker_failure_threshold: 3,
          breaker_cooldown_ms: 60_000,
        },
      },
    });
    const registered = await server.registerOn('pro');
    key = registered.key;
    otherKey = (await server.registerOn('pro')).key;
  });
  after(async () => {
    await server?.close();
    await upstream?.close();
    await opened?.cleanup();
  });

  const ask = (model: string, as = key): Promise<{ status: number }> =>
    server.call('POST', '/v1/chat/completions', {
      key: as,
      body: { model, messages: [{ role: 'user', content: 'hi' }] },
    });
  const stateOf = async (model: string): Promise<string> =>
    (await server.call('GET', '/status.json')).body.models.find((m: any) => m.id === model).state;

  it('is operational, then degraded when a tenth of recent attempts fail, then down when the circuit opens', async () => {
    for (let i = 0; i < 9; i++) assert.equal((await ask('model-c')).status, 200);
    assert.equal(await stateOf('model-c'), 'operational');
    upstream.script({ kind: 'status', status: 500 });
    assert.equal((await ask('model-c')).status, 502);
    assert.equal(await stateOf('model-c'), 'degraded');
    const received = upstream.received.length;
    upstream.script(
      { kind: 'status', status: 500 },
      { kind: 'status', status: 500 },
      { kind: 'status', status: 500 },
    );
    // Two accounts meet the failures: one account alone never opens a circuit others share.
    for (let i = 0; i < 3; i++) assert.equal((await ask('model-b', i === 1 ? otherKey : key)).status, 502);
    assert.equal(await stateOf('model-b'), 'down');
    const page = await (await fetch(`${server.url}/status`)).text();
    assert.ok(page.includes('Some models down'));
    assert.equal(upstream.received.length, received + 3, 'drawing the status called no upstream');
    const deployments = await server.call('GET', '/api/admin/deployments', {
      key: ADMIN_KEY,
    });
    const b = deployments.body.data.find((d: any) => d.model === 'model-b');
    assert.deepEqual([b.circuit, b.requests_5m, b.error_rate_5m], ['open', 3, 1]);
  });
});
