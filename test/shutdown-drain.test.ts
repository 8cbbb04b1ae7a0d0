import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
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

/**
 * A signal the moment the gateway process says something: the real `src/main.ts` as `npm start` runs it. Its
 * handlers are installed before start-up, so a signal while it migrates or just as it listens is a clean
 * stop (exit 0, logged as a drain), never the default action that ends a half-started process.
 */
describe('a signal during start-up or just as the server listens', () => {
  const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'tollgate-signal-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** Starts the gateway on a fresh SQLite file; sends SIGTERM as soon as its output matches `when`. */
  const signalWhen = async (
    when: RegExp,
    name: string,
    env: Record<string, string> = {},
  ): Promise<{ code: number | null; signal: string | null; output: string }> => {
    const child = spawn(process.execPath, [MAIN], {
      env: {
        ...process.env,
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        TOLLGATE_CONFIG: '',
        DATABASE_URL: `sqlite:${join(dir, `${name}.db`)}`,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const reap = (): void => void child.kill('SIGKILL');
    process.once('exit', reap);
    let output = '';
    let sent = false;
    const read = (piece: Buffer): void => {
      output += piece.toString();
      if (!sent && when.test(output)) {
        sent = true;
        child.kill('SIGTERM');
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    const [code, signal] = await new Promise<[number | null, string | null]>((resolve) =>
      child.on('exit', (exitCode, exitSignal) => resolve([exitCode, exitSignal])),
    );
    process.off('exit', reap);
    assert.ok(sent, `the process never printed ${String(when)}:\n${output}`);
    return { code, signal, output };
  };

  it('SIGTERM as soon as it prints "listening": it drains and exits 0', async () => {
    const run = await signalWhen(/listening on http/, 'listening');
    assert.equal(run.signal, null, `killed by ${run.signal}:\n${run.output}`);
    assert.equal(run.code, 0, run.output);
    assert.match(run.output, /draining in-flight requests/);
  });

  it('SIGTERM while start-up waits for Redis: start-up finishes, drains instead of listening, exits 0', async () => {
    // Nothing listens on this Redis port: start-up logs it at once, then waits up to 3 s for Redis.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const run = await signalWhen(/Redis is unreachable/, 'starting', {
      REDIS_URL: `redis://127.0.0.1:${port}`,
    });
    assert.equal(run.signal, null, `killed by ${run.signal}:\n${run.output}`);
    assert.equal(run.code, 0, run.output);
    assert.match(run.output, /stopping once start-up has finished/);
    assert.match(run.output, /draining in-flight requests/);
    assert.doesNotMatch(run.output, /listening on/, 'a stopping gateway does not start listening');
  });
});
