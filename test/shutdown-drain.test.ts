import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Agent, request } from 'undici';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

const sqlite = BACKENDS.find((b) => b.name === 'sqlite')!;

/**
 * A stop with requests in flight on keep-alive connections: once their answers are out, the connections are
 * idle, and an idle keep-alive connection must not hold the stop open for the server's keep-alive timeout
 * (72 s, longer than the 30 s after which `main` forces exit 1).
 */
describe('stopping with requests in flight on keep-alive connections', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  // A client that keeps connections open far longer than the stop may take (as a proxy or SDK pool does).
  const client = new Agent({ keepAliveTimeout: 120_000, keepAliveMaxTimeout: 120_000 });

  before(async () => {
    opened = await sqlite.open();
    server = await startTestServer({ backend: opened, yaml: { simulator: { chunk_interval_ms: 40 } } });
  });
  after(async () => {
    await client.close();
    await opened?.cleanup();
  });

  it('the answers in flight complete, then the server closes without waiting for the idle connections', async () => {
    const { key } = await server.register();
    const chat = async (): Promise<{ status: number; text: string; connection: unknown }> => {
      const response = await request(`${server.url}/v1/chat/completions`, {
        dispatcher: client,
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'model-a',
          max_tokens: 8,
          stream: true,
          messages: [{ role: 'user', content: 'Count slowly please.' }],
        }),
      });
      const text = await response.body.text();
      return { status: response.statusCode, text, connection: response.headers['connection'] };
    };
    // Streams in flight (about 8 chunks of 40 ms each), and one connection already idle.
    await chat();
    const inFlight = Promise.all([chat(), chat(), chat()]);
    await new Promise((resolve) => setTimeout(resolve, 60));
    const stopStarted = Date.now();
    const stopped = server.close().then(() => Date.now() - stopStarted);
    for (const answer of await inFlight) {
      assert.equal(answer.status, 200);
      assert.match(answer.text, /data: \[DONE\]/, 'the stream in flight ran to its end');
    }
    const tookMs = await Promise.race([
      stopped,
      new Promise<number>((resolve) => setTimeout(() => resolve(Infinity), 10_000)),
    ]);
    assert.ok(
      tookMs < 10_000,
      `the stop finished ${tookMs === Infinity ? 'not within 10 s' : `in ${tookMs} ms`}`,
    );
  });
});
