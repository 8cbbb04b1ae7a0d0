import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openaiChunk, openaiErrorEvent, startFakeOpenAI } from '../src/providers/openai/fake-openai.ts';
import {
  anthropicEvent,
  anthropicStart,
  anthropicText,
  startFakeAnthropic,
} from '../src/providers/anthropic/fake-anthropic.ts';
import { type FakeUpstream, RESET } from '../src/providers/fake-upstream.ts';
import { type RunningGateway, startGatewayProcess } from './helpers/process.ts';

const ADMIN = 'tg-admin-faults-test-0123456789abcdef';

/**
 * The gateway as its own process (as `npm start` runs it), driven through the catalog's process-ending
 * faults of old: it must still be running afterwards, and its fault counter must show that nothing reached
 * the last-resort handlers (`src/observability/process-faults.ts`).
 */
describe('fault catalog: the process survives and its fault handlers are never reached', () => {
  let dir: string;
  let openai: FakeUpstream;
  let anthropic: FakeUpstream;
  let gateway: RunningGateway;
  let key: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-faults-'));
    [openai, anthropic] = await Promise.all([startFakeOpenAI(), startFakeAnthropic()]);
    const config = join(dir, 'tollgate.yaml');
    // YAML is a superset of JSON.
    writeFileSync(
      config,
      JSON.stringify({
        providers: [
          { id: 'up', type: 'openai', base_url: openai.url },
          { id: 'claude', type: 'anthropic', base_url: anthropic.url },
        ],
        models: {
          'model-a': { deployments: [{ provider: 'claude', model: 'claude-test' }] },
          'model-b': { deployments: [{ provider: 'up', model: 'up-b' }] },
        },
        routing: { max_attempts: 1, breaker_failure_threshold: 1000 },
      }),
    );
    gateway = await startGatewayProcess({
      DATABASE_URL: `sqlite:${join(dir, 'tollgate.db')}`,
      TOLLGATE_ADMIN_KEY: ADMIN,
      TOLLGATE_CONFIG: config,
    });
    const registered = (await (
      await fetch(`${gateway.url}/api/auth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'faults@example.com', password: 'correct horse battery' }),
      })
    ).json()) as { api_key: { key: string }; account: { id: string } };
    key = registered.api_key.key;
    await fetch(`${gateway.url}/api/admin/accounts/${registered.account.id}/plan`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: '{"plan":"pro"}',
    });
  });
  after(async () => {
    gateway?.child.kill('SIGKILL');
    await Promise.all([openai?.close(), anthropic?.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  const stream = async (model: string): Promise<string> => {
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    return response.text();
  };

  it('survives every fault that used to end it, and counts no uncaught error', async () => {
    const role = openaiChunk({ role: 'assistant', content: '' });
    const hello = openaiChunk({ content: 'Hello' });
    const scenarios: [FakeUpstream, string][] = [];
    const add = (upstream: FakeUpstream, model: string, ...steps: (string | typeof RESET)[]): void => {
      upstream.script({ kind: 'raw', steps });
      scenarios.push([upstream, model]);
    };
    add(openai, 'model-b', openaiErrorEvent('The server had an error'));
    add(openai, 'model-b', role, hello, openaiErrorEvent('The server had an error'));
    add(openai, 'model-b', 'data: {not json\n\n');
    add(openai, 'model-b', role, hello, 'data: {not json\n\n');
    add(openai, 'model-b', role, 'data: {"object":"not.a.chunk"}\n\n');
    add(openai, 'model-b', role, hello, RESET);
    add(
      anthropic,
      'model-a',
      anthropicEvent('error', { error: { type: 'overloaded_error', message: 'Overloaded' } }),
    );
    add(
      anthropic,
      'model-a',
      anthropicStart(),
      anthropicText('Hello'),
      anthropicEvent('error', { error: { type: 'api_error', message: 'Internal server error' } }),
    );
    for (const [, model] of scenarios) {
      const text = await stream(model);
      assert.match(text, /"code":"provider_error"/);
    }
    assert.match(await stream('model-b'), /data: \[DONE\]/, 'the next request succeeds');
    assert.equal(gateway.child.exitCode, null, `the gateway is running:\n${gateway.output()}`);
    const metrics = await (
      await fetch(`${gateway.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } })
    ).text();
    assert.match(metrics, /tollgate_process_faults_total\{kind="uncaught_exception"\} 0\n/);
    assert.match(metrics, /tollgate_process_faults_total\{kind="unhandled_rejection"\} 0\n/);
    assert.doesNotMatch(gateway.output(), /uncaught|unhandled/i);
  });
});
