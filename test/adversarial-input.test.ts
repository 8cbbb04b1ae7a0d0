import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { type RunningGateway, startGatewayProcess } from './helpers/process.ts';
import { type LoopReading, readLoopProbe } from './helpers/read-loop-probe.ts';

const PROBE = fileURLToPath(new URL('./helpers/loop-probe.ts', import.meta.url));
const MiB = 1024 * 1024;
/** The longest the gateway's main thread may keep its event loop from turning while it takes these bodies. */
const MAX_BLOCK_MS = 50;

/** Random lowercase letters: one "word" the tokenizer cannot shortcut through a cache. */
function letters(length: number): string {
  const bytes = Buffer.alloc(length);
  for (let i = 0; i < length; i++) bytes[i] = 97 + Math.floor(Math.random() * 26);
  return bytes.toString('latin1');
}

/** A JSON Schema nested `depth` objects deep, as text (JSON.stringify itself cannot write one this deep). */
const nested = (depth: number): string =>
  '{"type":"object","properties":{"a":'.repeat(depth) + '{"type":"string"}' + '}}'.repeat(depth);

/** A body with `json` spliced in as the value of the placeholder string "NESTED". */
const withNested = (body: unknown, json: string): string => JSON.stringify(body).replace('"NESTED"', json);

/** What the gateway's probe measured since the last reading. */
const probe = (gateway: RunningGateway): Promise<LoopReading> => readLoopProbe(gateway, 5_000);

describe('adversarial request bodies', () => {
  let dir: string;
  let gateway: RunningGateway;
  let key: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-adversarial-'));
    const config = join(dir, 'tollgate.yaml');
    writeFileSync(config, 'simulator:\n  chunk_interval_ms: 1\n');
    gateway = await startGatewayProcess({
      DATABASE_URL: `sqlite:${join(dir, 'tollgate.db')}`,
      TOLLGATE_ADMIN_KEY: 'tg-admin-adversarial-0123456789abcdef',
      TOLLGATE_CONFIG: config,
      NODE_OPTIONS: `--import ${PROBE}`,
    });
    const registered = (await (
      await fetch(`${gateway.url}/api/auth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'attacker@example.com', password: 'correct horse battery' }),
      })
    ).json()) as { api_key: { key: string } };
    key = registered.api_key.key;
  });
  after(async () => {
    gateway?.child.kill('SIGKILL');
    if (gateway) await gateway.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  const send = (body: string | Buffer, signal: AbortSignal) =>
    fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body,
      signal,
    }).then(async (response) => ({ status: response.status, body: (await response.json()) as any }));

  it('never block the event loop for long, and /health keeps answering meanwhile', async () => {
    const bodies = {
      // One 4 MiB run of letters, just under the body limit.
      run: JSON.stringify({
        model: 'model-b',
        messages: [{ role: 'user', content: letters(4 * MiB - 200) }],
      }),
      deepSchema: withNested(
        {
          model: 'model-b',
          messages: [{ role: 'user', content: 'hi' }],
          tools: [{ type: 'function', function: { name: 'deep', parameters: 'NESTED' } }],
        },
        nested(5_000),
      ),
      manyMessages: JSON.stringify({
        model: 'model-b',
        messages: Array.from({ length: 2_048 }, () => ({ role: 'user', content: letters(1_900) })),
      }),
      manyTools: JSON.stringify({
        model: 'model-b',
        messages: [{ role: 'user', content: 'hi' }],
        tools: Array.from({ length: 50_000 }, (_, i) => ({ type: 'function', function: { name: `t${i}` } })),
      }),
    };
    for (const body of Object.values(bodies)) assert.ok(Buffer.byteLength(body) < 4 * MiB);

    await probe(gateway); // starts a fresh measurement: start-up work is not ours to judge here
    const signal = AbortSignal.timeout(30_000);
    const answers = Promise.all([
      send(bodies.run, signal),
      send(bodies.deepSchema, signal),
      send(bodies.manyMessages, signal),
      send(bodies.manyTools, signal),
      send(bodies.run, signal),
    ]);
    let done = false;
    void answers.finally(() => (done = true)).catch(() => {});
    let healthChecks = 0;
    let slowestHealthMs = 0;
    while (!done) {
      const started = performance.now();
      const health = await fetch(`${gateway.url}/health`, { signal: AbortSignal.timeout(2_000) });
      assert.equal(health.status, 200);
      await health.body?.cancel();
      slowestHealthMs = Math.max(slowestHealthMs, performance.now() - started);
      healthChecks++;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const [run, deepSchema, manyMessages, manyTools] = await answers;
    const measured = await probe(gateway);

    assert.equal(run.status, 400);
    assert.match(run.body.error.message, /context window/);
    assert.equal(deepSchema.status, 400);
    assert.equal(deepSchema.body.error.code, 'invalid_request');
    assert.match(deepSchema.body.error.message, /deeper than 64 levels/);
    assert.equal(manyMessages.status, 400);
    assert.match(manyMessages.body.error.message, /context window/);
    assert.equal(manyTools.status, 400);
    // Refused before it is parsed: its 100,000 small objects alone would hold one turn for ~30 ms.
    assert.equal(manyTools.body.error.code, 'invalid_request');
    assert.match(manyTools.body.error.message, /more than 65536 JSON values/);
    assert.ok(healthChecks >= 2, `/health answered ${healthChecks} times while the bodies were in flight`);
    assert.ok(measured.ticks > 10, 'the probe ran');
    assert.ok(
      measured.maxBlockMs < MAX_BLOCK_MS,
      `the event loop was blocked for ${measured.maxBlockMs.toFixed(1)} ms at once (slowest /health ${slowestHealthMs.toFixed(0)} ms)`,
    );
    assert.equal(gateway.child.exitCode, null, 'the gateway is alive');
  });

  it('deeply nested JSON anywhere in a request is a 400 naming the limit', async () => {
    const signal = AbortSignal.timeout(10_000);
    const base = { model: 'model-b', messages: [{ role: 'user', content: 'hi' }] };
    for (const body of [
      withNested({ ...base, metadata: 'NESTED' }, nested(5_000)),
      withNested(
        { ...base, response_format: { type: 'json_schema', json_schema: { schema: 'NESTED' } } },
        nested(40),
      ),
      withNested({ ...base, messages: [{ role: 'user', content: 'hi', extra: 'NESTED' }] }, nested(100)),
      withNested({ ...base, stop: ['NESTED'] }, '['.repeat(10_000) + ']'.repeat(10_000)),
    ]) {
      const answer = await send(body, signal);
      assert.equal(answer.status, 400);
      assert.equal(answer.body.error.code, 'invalid_request');
      assert.match(answer.body.error.message, /deeper than 64 levels, the limit/);
    }
    // A schema as deep as real ones are goes through.
    const fine = await send(
      withNested(
        {
          ...base,
          max_tokens: 5,
          tools: [{ type: 'function', function: { name: 'ok', parameters: 'NESTED' } }],
        },
        nested(15),
      ),
      signal,
    );
    assert.equal(fine.status, 200);
  });
});
