import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type RunningGateway, startGatewayProcess } from './helpers/process.ts';

/**
 * A drain waits for the streams in flight (up to 30 s); an operator who sends the signal again means "now":
 * the process exits at once (status 1), after writing the settlements still waiting to the spool.
 */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const deadline = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());

describe('a second signal while draining', () => {
  let dir: string;
  let gateway: RunningGateway;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-second-signal-'));
    writeFileSync(join(dir, 'tollgate.yaml'), 'simulator:\n  chunk_interval_ms: 400\n');
    gateway = await startGatewayProcess({
      DATABASE_URL: `sqlite:${join(dir, 'tollgate.db')}`,
      TOLLGATE_CONFIG: join(dir, 'tollgate.yaml'),
      LOG_LEVEL: 'info',
    });
  });
  after(() => {
    if (gateway.child.exitCode === null && gateway.child.signalCode === null) gateway.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('exits at once, whatever is still in flight', async () => {
    const registered = await fetch(`${gateway.url}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'twice@example.com', password: 'correct horse battery' }),
    });
    const key = ((await registered.json()) as { api_key: { key: string } }).api_key.key;
    // A stream of several seconds (about 20 chunks, 400 ms apart): the drain would wait for it.
    const stream = fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'model-b',
        max_tokens: 200,
        stream: true,
        messages: [{ role: 'user', content: 'a long story please' }],
      }),
    }).then((response) => response.text().catch(() => 'cut'));
    await sleep(500);
    gateway.child.kill('SIGTERM');
    for (let i = 0; i < 100 && !gateway.output().includes('draining in-flight requests'); i++)
      await sleep(20);
    await sleep(200);
    assert.equal(gateway.child.exitCode, null, 'the first signal drains: the stream keeps it running');
    const sent = Date.now();
    gateway.child.kill('SIGTERM');
    const code = await Promise.race([gateway.exited, deadline(5_000).then(() => 'still running' as const)]);
    assert.equal(code, 1, `the second signal ends it at once (${Date.now() - sent} ms)`);
    assert.ok(Date.now() - sent < 3_000, `it took ${Date.now() - sent} ms`);
    assert.match(gateway.output(), /second SIGTERM while draining: exiting now/);
    assert.notEqual(await stream, undefined);
  });
});
