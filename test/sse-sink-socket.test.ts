import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, request as httpRequest, type ServerResponse } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { TextSink } from '../src/gateway/stream-sink.ts';
import { createSseSink } from '../src/http/sse-sink.ts';

const tick = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Pieces as the fast path writes them: the first as text (the head goes with it), the rest as bytes. */
const pieces = (prefix: string, count: number): (string | Buffer)[] =>
  Array.from({ length: count }, (_, i) => {
    const text = `data: ${prefix}${i} ${'x'.repeat(i * 37)}\n\n`;
    return i === 0 ? text : Buffer.from(text);
  });

/**
 * The SSE text sink on a real node:http server and socket: after the first write, byte pieces go to the socket as
 * chunks of the chunked encoding that the sink frames itself; the response must read exactly as if every piece had
 * gone through `response.write`, for every kind of client.
 */
describe('createSseSink on a real socket', () => {
  let serve: (sink: TextSink, response: ServerResponse, path: string) => void | Promise<void> = () => {};
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const sink = createSseSink(response, { 'x-request-id': 'r1' });
      sink.open({});
      void serve(sink, response, request.url ?? '');
    });
  });
  let port = 0;
  before(async () => {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  /** A raw HTTP/1.1 exchange: what the client sends, everything the server sends back until it is quiet. */
  async function raw(text: string, quietMs = 150): Promise<string> {
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    socket.write(text);
    let got = '';
    let last = Date.now();
    socket.on('data', (piece: Buffer) => ((got += piece.toString('latin1')), (last = Date.now())));
    while (Date.now() - last < quietMs) await tick(20);
    socket.destroy();
    return got;
  }

  /** Decodes a chunked body strictly: each size line, exactly that many bytes, CRLF; then the end. */
  function unchunk(body: string): { pieces: string[]; rest: string } {
    const out: string[] = [];
    let at = 0;
    for (;;) {
      const lineEnd = body.indexOf('\r\n', at);
      assert.notEqual(lineEnd, -1, 'a chunk size line');
      const size = parseInt(body.slice(at, lineEnd), 16);
      assert.ok(/^[0-9a-f]+$/.test(body.slice(at, lineEnd)), `chunk size in hex: ${body.slice(at, lineEnd)}`);
      at = lineEnd + 2;
      if (size === 0) {
        assert.equal(body.slice(at, at + 2), '\r\n', 'the end of the body');
        return { pieces: out, rest: body.slice(at + 2) };
      }
      out.push(body.slice(at, at + size));
      assert.equal(body.slice(at + size, at + size + 2), '\r\n', 'CRLF after each chunk');
      at += size + 2;
    }
  }

  it('writes every piece in order, each one chunk of the chunked encoding, the head first', async () => {
    const sent = pieces('a', 40);
    serve = (sink) => {
      for (const piece of sent) assert.equal(sink.write(piece), true);
      sink.end();
    };
    const answer = await raw('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n');
    const headEnd = answer.indexOf('\r\n\r\n');
    const head = answer.slice(0, headEnd);
    assert.match(head, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(head, /\r\ntransfer-encoding: chunked/i);
    assert.match(head, /\r\nx-request-id: r1/i);
    const { pieces: got, rest } = unchunk(answer.slice(headEnd + 4));
    assert.deepEqual(got, sent.map(String));
    assert.equal(rest, '');
  });

  it('keeps each answer whole on a connection that sends its next request before the last answer ended', async () => {
    // The second answer is written while the first is still open: node:http keeps it in the response until the
    // first ends, and the sink must not write it to the socket in the middle of the first.
    let first: (() => void) | undefined;
    serve = async (sink, _response, path) => {
      const sent = pieces(path, 12);
      if (path === '/one') {
        sink.write(sent[0]!);
        await new Promise<void>((resolve) => (first = resolve));
        for (const piece of sent.slice(1)) sink.write(piece);
        sink.end();
      } else {
        for (const piece of sent) sink.write(piece);
        first?.();
        await tick(20);
        for (const piece of pieces(`${path}-after`, 5).slice(1)) sink.write(piece);
        sink.end();
      }
    };
    const request = (path: string): string => `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n`;
    const answer = await raw(request('/one') + request('/two'), 300);
    const [head1, ...rest1] = answer.split('\r\n\r\n');
    assert.match(head1!, /^HTTP\/1\.1 200 OK/);
    const one = unchunk(rest1.join('\r\n\r\n'));
    assert.deepEqual(one.pieces, pieces('/one', 12).map(String));
    const headEnd = one.rest.indexOf('\r\n\r\n');
    assert.match(one.rest.slice(0, headEnd), /^HTTP\/1\.1 200 OK/);
    const two = unchunk(one.rest.slice(headEnd + 4));
    assert.deepEqual(two.pieces, [...pieces('/two', 12), ...pieces('/two-after', 5).slice(1)].map(String));
    assert.equal(two.rest, '');
  });

  it('writes the plain body to an HTTP/1.0 client, which takes no chunked encoding', async () => {
    const sent = pieces('b', 10);
    serve = (sink) => {
      for (const piece of sent) sink.write(piece);
      sink.end();
    };
    const answer = await raw('POST / HTTP/1.0\r\ncontent-length: 0\r\n\r\n');
    const headEnd = answer.indexOf('\r\n\r\n');
    assert.doesNotMatch(answer.slice(0, headEnd), /transfer-encoding/i);
    assert.equal(answer.slice(headEnd + 4), sent.map(String).join(''));
  });

  it('says when the client is not keeping up, and drain ends once the socket has taken what was written', async () => {
    const big = Buffer.alloc(256 * 1024, 'y');
    let full = false;
    let drained = false;
    let closedAtDrain = true;
    let resumedAt = 0;
    let drainedAt = 0;
    let written = 0;
    serve = async (sink) => {
      sink.write('data: start\n\n');
      for (let i = 0; i < 64 && !full; i++) {
        full = !sink.write(big);
        written += big.length;
      }
      // A drain that never came would cut the client off after this long.
      await sink.drain(5_000);
      drained = true;
      drainedAt = Date.now();
      closedAtDrain = sink.closed;
      sink.end();
    };
    let received = 0;
    const done = new Promise<void>((resolve, reject) => {
      const request = httpRequest({ port, host: '127.0.0.1', method: 'POST', path: '/' }, (response) => {
        // Reads nothing for a while: the server's writes fill the socket.
        response.pause();
        setTimeout(() => {
          assert.equal(full, true, 'a write answered false');
          response.on('data', (piece: Buffer) => (received += piece.length));
          // 'close' also comes for an answer cut off: then the count below falls short.
          response.on('close', resolve);
          response.on('error', () => {});
          resumedAt = Date.now();
          response.resume();
        }, 300);
      });
      request.on('error', reject);
      request.end();
    });
    await done;
    assert.equal(drained, true);
    assert.equal(closedAtDrain, false, 'drained, not cut off');
    assert.ok(
      drainedAt - resumedAt < 3_000,
      `drained ${drainedAt - resumedAt} ms after the client read again`,
    );
    assert.equal(received, written + 'data: start\n\n'.length);
  });
});
