import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { RawChunk, type PassChunk } from '../src/core/raw-chunk.ts';
import { scanChunk } from '../src/providers/openai/scan-chunk.ts';
import { type PassThroughStream } from '../src/core/provider.ts';
import { ProviderError } from '../src/core/provider-error.ts';
import { createUpstreamClient, DONE, type UpstreamClient } from '../src/providers/upstream-http.ts';

const event = (content: string): string =>
  `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"${content}"}}]}\n\n`;
const decode = (data: Buffer): PassChunk | typeof DONE => {
  if (data.toString() === '[DONE]') return DONE;
  const raw = scanChunk(data);
  if (raw === undefined) throw new ProviderError('protocol', 'bad event');
  return raw;
};
const textOf = (batch: PassChunk[]): string[] => batch.map((chunk) => (chunk as RawChunk).text);
/** More than loopback's socket buffers hold (about 130 bytes an event), so a paused reader makes the writer wait. */
const TOTAL = 200_000;
const tick = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A real upstream on a real port; each test says how it answers. */
describe('postEvents: the fast path reader on a real socket', () => {
  let serve: (response: ServerResponse) => void = () => {};
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => serve(response));
  });
  let client: UpstreamClient;
  before(async () => {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    client = createUpstreamClient(`http://127.0.0.1:${port}/v1`, {
      connectMs: 1000,
      firstByteMs: 1000,
      idleStreamMs: 300,
    });
  });
  after(async () => {
    await client.close();
    // The idle test's answer is never ended: its connection would keep the server (and the process) open.
    server.closeAllConnections();
    server.close();
  });

  const open = (signal = new AbortController().signal): Promise<PassThroughStream> =>
    client.postEvents('/chat/completions', {}, '{}', signal, decode);

  /** Collects every batch and the end; `take` says whether each batch is taken at once. */
  function collect(stream: PassThroughStream, take: (index: number) => boolean = () => true) {
    const batches: string[][] = [];
    const ended = new Promise<ProviderError | undefined>((resolve) =>
      stream.start({
        batch: (batch) => (batches.push(textOf(batch)), take(batches.length - 1)),
        end: resolve,
      }),
    );
    return { batches, ended };
  }

  it('relays each read as it arrives, never held back to batch', async () => {
    serve = (response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(event('a'));
      setTimeout(() => response.write(event('b') + event('c')), 30);
      setTimeout(() => response.end('data: [DONE]\n\n'), 60);
    };
    const stream = await open();
    assert.deepEqual(textOf(stream.first), ['a']);
    const { batches, ended } = collect(stream);
    await tick(45);
    assert.deepEqual(batches, [['b', 'c']], 'the second read is handed over before the stream ends');
    assert.equal(await ended, undefined);
  });

  it('a handler that cannot keep up pauses the upstream until it resumes', async () => {
    let written = 0;
    serve = (answer) => {
      answer.writeHead(200, { 'content-type': 'text/event-stream' });
      answer.write(event('first'));
      const pump = (): void => {
        // Fills the socket until it pushes back: a paused reader must make it push back.
        let room = true;
        while (written < TOTAL && room) room = answer.write(event(`x${written++}`));
        if (written < TOTAL) answer.once('drain', pump);
        else answer.end('data: [DONE]\n\n');
      };
      setTimeout(pump, 10);
    };
    const stream = await open();
    let keepingUp = false;
    const { batches, ended } = collect(stream, () => keepingUp);
    await tick(200);
    assert.equal(batches.length, 1, 'nothing more is handed over while paused');
    assert.ok(written < TOTAL, `the upstream was held back (${written} of ${TOTAL} written)`);
    keepingUp = true;
    stream.resume();
    assert.equal(await ended, undefined);
    assert.equal(written, TOTAL, 'resuming lets the upstream go on to its end');
    assert.equal(batches.flat().length, TOTAL, 'every chunk, once');
  });

  it('an abort (the client left) ends the stream and closes the upstream call', async () => {
    let closed: Promise<unknown> = Promise.resolve();
    serve = (response) => {
      closed = once(response, 'close');
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(event('a'));
    };
    const abort = new AbortController();
    const stream = await open(abort.signal);
    const { ended } = collect(stream);
    abort.abort();
    const failure = await ended;
    assert.equal(failure?.failure, 'aborted');
    await closed;
  });

  it('an idle upstream ends the stream with a timeout', async () => {
    serve = (response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(event('a'));
    };
    const { ended } = collect(await open());
    assert.equal((await ended)?.failure, 'timeout');
  });

  it('chunks before a bad event in the same read go first, then the failure', async () => {
    serve = (response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(event('a'));
      setTimeout(() => response.end(`${event('b')}data: {oops\n\n${event('c')}`), 20);
    };
    const stream = await open();
    const { batches, ended } = collect(stream);
    assert.equal((await ended)?.failure, 'protocol');
    assert.deepEqual(batches, [['b']]);
  });

  it('an error status rejects with the upstream message; a stream without a chunk rejects', async () => {
    serve = (response) => {
      response.writeHead(503, { 'content-type': 'application/json' });
      response.end('{"error":{"message":"overloaded"}}');
    };
    await assert.rejects(open(), (error: unknown) => {
      assert.ok(error instanceof ProviderError);
      assert.equal(error.status, 503);
      assert.match(error.message, /overloaded/);
      return true;
    });
    serve = (response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end('data: [DONE]\n\n');
    };
    await assert.rejects(open(), (error: unknown) => (error as ProviderError).failure === 'protocol');
  });
});
