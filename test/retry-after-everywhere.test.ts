import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Agent, request } from 'undici';
import { createPostgresDb } from '../src/store/postgres/postgres-db.ts';
import type { Db } from '../src/store/db.ts';
import { BACKENDS, type OpenedBackend, POSTGRES_URL } from './helpers/backends.ts';
import { type RunningGateway, startGatewayProcess } from './helpers/process.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.ts';

/**
 * Every 429 and 503 the gateway sends says when to retry, with both `Retry-After` and `retry-after-ms`: from
 * every door (chat, Responses, Messages, count_tokens, /api, sessions, checkout, health) and every code path
 * (limits, sign-in and sign-up throttles, an unreachable database, a drain).
 */
const postgres = BACKENDS.find((backend) => backend.name === 'postgres');
const postgresSkip = postgres ? await postgres.unavailable() : 'PostgreSQL is not in TOLLGATE_TEST_BACKENDS';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A time limit for a race: it does not keep the test process alive once the race is decided. */
const deadline = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());

interface Seen {
  what: string;
  status: number;
  retryAfter: string | null;
  retryAfterMs: string | null;
}

/** Each 429 or 503 has both headers, a whole number of seconds ≥ 1 and a number of milliseconds. */
function assertRetryHeaders(seen: readonly Seen[]): void {
  for (const answer of seen.filter((s) => s.status === 429 || s.status === 503)) {
    assert.match(answer.retryAfter ?? '', /^[1-9]\d*$/, `${answer.what} (${answer.status}): Retry-After`);
    assert.match(answer.retryAfterMs ?? '', /^\d+$/, `${answer.what} (${answer.status}): retry-after-ms`);
  }
}

const CHAT = { model: 'model-b', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] };
const MESSAGES = { model: 'model-b', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] };
/** Each front door: its path and a small valid body. */
const DOORS: [string, unknown][] = [
  ['/v1/chat/completions', CHAT],
  ['/v1/responses', { model: 'model-b', input: 'hi', max_output_tokens: 16 }],
  ['/v1/messages', MESSAGES],
  ['/v1/messages/count_tokens', { model: 'model-b', messages: MESSAGES.messages }],
];

describe('every 429 and 503, on every door and code path', { skip: postgresSkip ?? false }, () => {
  let opened: OpenedBackend;
  let proxy: TcpProxy;
  let db: Db;
  let server: TestServer;
  const seen: Seen[] = [];
  /** A key of an account that exists, registered before the sign-up throttle is exercised. */

  before(async () => {
    opened = await postgres!.open();
    proxy = await startTcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
    const url = new URL(POSTGRES_URL);
    url.host = `127.0.0.1:${proxy.port}`;
    db = createPostgresDb({
      connectionString: url.toString(),
      schema: opened.schema!,
      connectionTimeoutMs: 500,
    });
    server = await startTestServer({
      backend: { ...opened, db },
      yaml: { simulator: { chunk_interval_ms: 1 } },
    });
  });
  after(async () => {
    await server?.close();
    await db?.close();
    await proxy?.close();
    await opened?.cleanup();
  });

  const send = async (
    what: string,
    method: string,
    path: string,
    options: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<number> => {
    const headers: Record<string, string> = { ...options.headers };
    if (options.key !== undefined) {
      headers['authorization'] = `Bearer ${options.key}`;
      if (path.startsWith('/v1/messages')) headers['x-api-key'] = options.key;
    }
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (path.startsWith('/v1/messages')) headers['anthropic-version'] = '2023-06-01';
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers,
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    });
    await response.arrayBuffer();
    seen.push({
      what,
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
      retryAfterMs: response.headers.get('retry-after-ms'),
    });
    return response.status;
  };

  it('429s: the key’s request limit on each door, the sign-in and sign-up throttles', async () => {
    const { key, accountId } = await server.registerOn('enterprise');
    const limits = await server.call('PUT', `/api/admin/accounts/${accountId}/limits`, {
      key: ADMIN_KEY,
      body: { rpm: 1, tpm: null, daily_tokens: null },
    });
    assert.equal(limits.status, 200, JSON.stringify(limits.body));
    assert.equal(await send('first chat', 'POST', '/v1/chat/completions', { key, body: CHAT }), 200);
    for (const [path, body] of DOORS.slice(0, 3))
      assert.equal(await send(path, 'POST', path, { key, body }), 429, `${path} past the request limit`);

    let signIn = 0;
    for (let i = 0; i < 30 && signIn !== 429; i++)
      signIn = await send('sign-in', 'POST', '/api/auth/login', {
        body: { email: 'nobody@example.com', password: 'wrong password here' },
      });
    assert.equal(signIn, 429, 'the sign-in throttle refuses');
    let signUp = 0;
    for (let i = 0; i < 60 && signUp !== 429; i++)
      signUp = await send('sign-up', 'POST', '/api/auth/register', {
        body: { email: `flood${i}@example.com`, password: 'correct horse battery' },
      });
    assert.equal(signUp, 429, 'the sign-up throttle refuses');
    assertRetryHeaders(seen);
  });

  it('503s while the database is unreachable: each door, /api, sessions, checkout, health', async () => {
    await proxy.cut();
    try {
      // A key the instance has not seen needs the database: every door answers 503.
      const unknown = `sk-tg-${'x'.repeat(40)}`;
      for (const [path, body] of DOORS)
        assert.equal(await send(path, 'POST', path, { key: unknown, body }), 503, path);
      assert.equal(await send('/api/account', 'GET', '/api/account', { key: unknown }), 503);
      assert.equal(await send('/api/usage', 'GET', '/api/usage', { key: unknown }), 503);
      assert.equal(
        await send('sign-in', 'POST', '/api/auth/login', {
          body: { email: 'someone@example.com', password: 'correct horse battery' },
        }),
        503,
      );
      assert.equal(await send('checkout', 'GET', '/checkout/ord_missing'), 503);
      assert.equal(await send('health', 'GET', '/health'), 503);
    } finally {
      await proxy.restore();
    }
    assertRetryHeaders(seen);
  });
});

/**
 * The gateway process stopped with SIGTERM while clients keep sending on keep-alive connections: requests that
 * arrive on a connection busy when the drain began get 503, and each of them (from the chat endpoint's doors
 * and from the other routes) says when to retry.
 */
describe('SIGTERM under keep-alive load', () => {
  let dir: string;
  let gateway: RunningGateway;
  const agent = new Agent({ keepAliveTimeout: 60_000, keepAliveMaxTimeout: 60_000, connections: 4 });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-retry-after-'));
    writeFileSync(join(dir, 'tollgate.yaml'), 'simulator:\n  chunk_interval_ms: 300\n');
    gateway = await startGatewayProcess({
      DATABASE_URL: `sqlite:${join(dir, 'tollgate.db')}`,
      TOLLGATE_CONFIG: join(dir, 'tollgate.yaml'),
      TOLLGATE_ADMIN_KEY: ADMIN_KEY,
      LOG_LEVEL: 'info',
    });
  });
  after(async () => {
    if (gateway && gateway.child.exitCode === null && gateway.child.signalCode === null) {
      gateway.child.kill('SIGKILL');
      await gateway.exited;
    }
    await agent.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** An HTTP/1.1 request as bytes, keep-alive. */
  const raw = (method: string, path: string, key: string, body?: unknown): string => {
    const text = body === undefined ? '' : JSON.stringify(body);
    return (
      `${method} ${path} HTTP/1.1\r\nhost: gateway\r\nauthorization: Bearer ${key}\r\nx-api-key: ${key}\r\n` +
      `anthropic-version: 2023-06-01\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`
    );
  };

  /** The status line and headers of every answer in a connection's bytes. */
  const answersIn = (bytes: string): { status: number; headers: Map<string, string> }[] =>
    [...bytes.matchAll(/HTTP\/1\.1 (\d{3}) [^\r]*\r\n([\s\S]*?)\r\n\r\n/g)].map((match) => ({
      status: Number(match[1]),
      headers: new Map(
        match[2]!.split('\r\n').map((line) => {
          const colon = line.indexOf(':');
          return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()] as [string, string];
        }),
      ),
    }));

  it('every 503 it answers during the drain carries Retry-After and retry-after-ms', async () => {
    const registered = await fetch(`${gateway.url}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'drain@example.com', password: 'correct horse battery' }),
    });
    const key = ((await registered.json()) as { api_key: { key: string } }).api_key.key;
    const port = Number(new URL(gateway.url).port);
    const slowStream = raw('POST', '/v1/chat/completions', key, { ...CHAT, max_tokens: 20, stream: true });
    // After the drain began, each of these arrives on a connection busy with a stream.
    const late: [string, string][] = [
      ...DOORS.map(([path, body]): [string, string] => [path, raw('POST', path, key, body)]),
      ['/api/account', raw('GET', '/api/account', key)],
      ['/health', raw('GET', '/health', key)],
      ['/api/auth/login', raw('POST', '/api/auth/login', key, { email: 'a@example.com', password: 'x' })],
    ];
    const sockets = late.map(() => {
      const socket = connect(port, '127.0.0.1');
      let bytes = '';
      socket.on('data', (piece: Buffer) => (bytes += piece.toString('latin1')));
      const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(bytes)));
      socket.on('error', () => {});
      socket.write(slowStream);
      return { socket, closed, streaming: () => bytes.startsWith('HTTP/1.1 200') };
    });

    // Keep-alive load: requests on pooled connections all through the stop.
    const seen: Seen[] = [];
    let loading = true;
    const load = async (): Promise<void> => {
      while (loading) {
        try {
          const response = await request(`${gateway.url}/v1/chat/completions`, {
            dispatcher: agent,
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify(CHAT),
          });
          await response.body.text();
          const header = (name: string) => (response.headers[name] as string | undefined) ?? null;
          seen.push({
            what: 'keep-alive load',
            status: response.statusCode,
            retryAfter: header('retry-after'),
            retryAfterMs: header('retry-after-ms'),
          });
        } catch {
          await sleep(20); // refused once the listener is closed
        }
      }
    };
    const loaders = [load(), load(), load()];
    // Every connection's stream has begun (the machine may be slow): each connection is busy at the stop.
    for (let i = 0; i < 500 && !sockets.every((s) => s.streaming()); i++) await sleep(20);
    assert.ok(
      sockets.every((s) => s.streaming()),
      'every slow stream began',
    );
    gateway.child.kill('SIGTERM');
    for (let i = 0; i < 100 && !gateway.output().includes('draining in-flight requests'); i++)
      await sleep(20);
    for (const [i, [, bytes]] of late.entries()) sockets[i]!.socket.write(bytes);
    const code = await Promise.race([gateway.exited, deadline(30_000).then(() => 'still running' as const)]);
    loading = false;
    await Promise.all(loaders);
    assert.equal(code, 0, gateway.output().slice(-2000));

    for (const [i, [what]] of late.entries()) {
      const answers = answersIn(await sockets[i]!.closed);
      assert.equal(answers[0]?.status, 200, `${what}: the stream in flight finished`);
      assert.equal(answers[1]?.status, 503, `${what}: a request arriving during the drain gets 503`);
      for (const answer of answers.slice(1))
        seen.push({
          what,
          status: answer.status,
          retryAfter: answer.headers.get('retry-after') ?? null,
          retryAfterMs: answer.headers.get('retry-after-ms') ?? null,
        });
    }
    assert.ok(seen.filter((s) => s.status === 503).length >= late.length);
    assertRetryHeaders(seen);
  });
});
