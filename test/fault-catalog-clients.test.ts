import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  assertNextSucceeds,
  assertNoHold,
  type Catalog,
  IDLE_MS,
  recordOf,
  startCatalog,
} from './helpers/catalog.ts';

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `check` holds, for at most `ms`. */
async function until(check: () => boolean, ms = 2000): Promise<void> {
  for (const start = Date.now(); !check() && Date.now() - start < ms;) await pause(10);
}

/** The clients' half of the fault catalog: callers that leave, stall, dribble or pipeline. */
describe('fault catalog: clients', () => {
  let c: Catalog;
  before(async () => {
    c = await startCatalog();
  });
  after(() => c?.close());

  const chatBody = (extra: Record<string, unknown> = {}): string =>
    JSON.stringify({ model: 'model-b', messages: [{ role: 'user', content: 'hi' }], ...extra });

  /** A raw HTTP/1.1 request's bytes. */
  const rawRequest = (body: string, extra = ''): string =>
    `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${c.key}\r\n` +
    `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}\r\n`;

  const open = (): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const { port } = new URL(c.server.url);
      const socket = connect(Number(port), '127.0.0.1', () => resolve(socket));
      socket.on('error', reject);
    });

  /** The latest usage record of model-b, once settlements are written. */
  const latestRecord = async (): Promise<any> => {
    await c.server.services.settlements.flush();
    return c.opened.db.get(
      "SELECT * FROM usage_records WHERE model = 'model-b' ORDER BY created_at DESC, rowid DESC LIMIT 1",
    );
  };

  it('a client that leaves before the headers: the upstream call is aborted, the request cancelled', async () => {
    c.openai.script({ kind: 'hang' });
    const abortedBefore = c.openai.aborted;
    const receivedBefore = c.openai.received.length;
    const { port } = new URL(c.server.url);
    const request = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/v1/chat/completions',
      headers: { authorization: `Bearer ${c.key}`, 'content-type': 'application/json' },
    });
    request.on('error', () => {});
    request.end(chatBody({ stream: true }));
    await until(() => c.openai.received.length > receivedBefore);
    request.destroy();
    await until(() => c.openai.aborted > abortedBefore);
    assert.equal(c.openai.aborted, abortedBefore + 1, 'the upstream connection was closed');
    assert.equal(c.openai.received.length, receivedBefore + 1, 'a cancelled request is not retried');
    assert.equal((await latestRecord()).status, 'cancelled');
    await assertNoHold(c);
    await assertNextSucceeds(c, 'model-b');
  });

  it('a client that leaves mid-stream: the upstream call is aborted, what was sent is billed', async () => {
    c.openai.script({ kind: 'slow', intervalMs: 20, chunks: 200 });
    const abortedBefore = c.openai.aborted;
    const controller = new AbortController();
    const response = await fetch(`${c.server.url}/v1/chat/completions`, {
      method: 'POST',
      signal: controller.signal,
      headers: { authorization: `Bearer ${c.key}`, 'content-type': 'application/json' },
      body: chatBody({ stream: true }),
    });
    const reader = response.body!.getReader();
    for (let i = 0; i < 4; i++) await reader.read();
    controller.abort();
    await until(() => c.openai.aborted > abortedBefore);
    assert.equal(c.openai.aborted, abortedBefore + 1);
    const record = await recordOf(c, response.headers.get('x-request-id')!);
    assert.equal(record.status, 'cancelled');
    assert.ok(record.completion_tokens >= 1, 'the chunks already relayed are billed');
    await assertNoHold(c);
    await assertNextSucceeds(c, 'model-b');
  });

  it('a client that stops reading: memory stays bounded and the idle timeout ends the stream', async () => {
    const maxBytes = 256 * 1024 * 1024;
    c.openai.script({ kind: 'flood', maxBytes });
    const abortedBefore = c.openai.aborted;
    const socket = await open();
    socket.pause(); // reads nothing, ever
    socket.write(rawRequest(chatBody({ stream: true })) + chatBody({ stream: true }));
    const rssBefore = process.memoryUsage().rss;
    await until(() => c.openai.aborted > abortedBefore, 20 * IDLE_MS);
    assert.equal(c.openai.aborted, abortedBefore + 1, 'the gateway gave up on the stalled client');
    // What the upstream could send is what the sockets' buffers hold, not the whole answer.
    assert.ok(c.openai.flooded < 64 * 1024 * 1024, `the upstream sent ${c.openai.flooded} bytes`);
    assert.ok(process.memoryUsage().rss - rssBefore < 128 * 1024 * 1024, 'memory stayed bounded');
    socket.destroy();
    assert.equal((await latestRecord()).status, 'cancelled');
    await assertNoHold(c);
    await assertNextSucceeds(c, 'model-b');
  });

  it('a body sent one byte at a time is read whole and answered', async () => {
    const socket = await open();
    let answer = '';
    socket.on('data', (piece: Buffer) => (answer += piece.toString()));
    const body = chatBody();
    socket.write(rawRequest(body, 'connection: close\r\n'));
    for (const byte of Buffer.from(body)) {
      socket.write(Buffer.from([byte]));
      await pause(1);
    }
    await new Promise((resolve) => socket.on('close', resolve));
    assert.match(answer, /^HTTP\/1\.1 200 /);
    assert.match(answer, /"content":"Hello from the fake upstream\."/);
  });

  it('pipelined requests are answered in order on one connection', async () => {
    const socket = await open();
    let answer = '';
    socket.on('data', (piece: Buffer) => (answer += piece.toString()));
    const first = chatBody({ stream: true });
    const second = chatBody();
    const third = chatBody({ model: 'model-a' });
    socket.write(
      rawRequest(first) +
        first +
        rawRequest(second) +
        second +
        rawRequest(third, 'connection: close\r\n') +
        third,
    );
    await new Promise((resolve) => socket.on('close', resolve));
    const statuses = [...answer.matchAll(/HTTP\/1\.1 (\d+) /g)].map((m) => m[1]);
    assert.deepEqual(statuses, ['200', '200', '200']);
    const streamAt = answer.indexOf('data: [DONE]');
    const wholeAt = answer.indexOf('"object":"chat.completion"');
    assert.ok(streamAt !== -1 && wholeAt > streamAt, 'the stream, then the whole answers');
    assert.match(answer.slice(wholeAt), /"model":"model-a"/);
    await assertNoHold(c);
  });
});
