import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createSseSink } from '../src/http/sse-sink.ts';
import { createUpstreamClient, readEvents, releaseBody } from '../src/providers/upstream-http.ts';

const TIMEOUTS = { connectMs: 500, firstByteMs: 500, idleStreamMs: 500 };

/**
 * Release and abort paths, called twice and in every order, on real sockets: none may throw or emit an
 * error nobody handles. A process-level listener fails the test if one does.
 */
describe('release and abort paths are safe twice and in any order', () => {
  const faults: unknown[] = [];
  const onFault = (error: unknown): void => void faults.push(error);
  let server: ReturnType<typeof createServer>;
  let url: string;
  let sinkResponse: Promise<ServerResponse>;
  let gotResponse: (response: ServerResponse) => void;

  before(async () => {
    process.on('uncaughtException', onFault);
    server = createServer((req, res) => {
      if (req.url === '/sink') return gotResponse(res);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[]}\n\n');
      // The rest arrives and waits, unread, in the body when it is let go (as after a malformed event).
      setTimeout(() => res.end('data: {not json\n\n'), 10);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    process.off('uncaughtException', onFault);
  });

  const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 50));

  it('an upstream body: released mid-way twice, then as finished, then aborted', async () => {
    const client = createUpstreamClient(url, TIMEOUTS);
    const abort = new AbortController();
    const response = await client.post('/x', {}, '{}', abort.signal);
    const events = readEvents(response);
    assert.deepEqual((await events.next()).value, { event: undefined, data: '{"choices":[]}' });
    await settle();
    await events.return(undefined);
    releaseBody(response.body, false);
    releaseBody(response.body, false);
    await settle();
    releaseBody(response.body, true);
    abort.abort();
    await settle();
    // Aborted first, then released.
    const second = new AbortController();
    const other = await client.post('/x', {}, '{}', second.signal);
    second.abort();
    releaseBody(other.body, false);
    releaseBody(other.body, true);
    await settle();
    await client.close();
    assert.deepEqual(faults, []);
  });

  it('a client stream: ended twice, written after its end, drained after the client left', async () => {
    sinkResponse = new Promise((resolve) => (gotResponse = resolve));
    const { port } = new URL(url);
    const request = httpRequest({ host: '127.0.0.1', port, path: '/sink' });
    request.on('error', () => {});
    request.on('response', (response) => response.resume());
    request.end();
    const sink = createSseSink(await sinkResponse, {});
    sink.open({});
    assert.equal(sink.write('data: 1\n\n'), true);
    sink.end();
    sink.end();
    assert.equal(sink.write('data: after the end\n\n'), true, 'a write after the end is not made');
    await sink.drain(100);
    request.destroy();
    await settle();
    sink.end();
    sink.open({});
    await sink.drain(100);
    await settle();
    assert.deepEqual(faults, []);
  });

  it('a client stream whose client left first: written, drained, ended', async () => {
    sinkResponse = new Promise((resolve) => (gotResponse = resolve));
    const { port } = new URL(url);
    const request = httpRequest({ host: '127.0.0.1', port, path: '/sink' });
    request.on('error', () => {});
    request.end();
    const response = await sinkResponse;
    const sink = createSseSink(response, {});
    let closed = 0;
    sink.onClose(() => (closed += 1));
    request.destroy();
    await new Promise((resolve) => response.on('close', resolve));
    assert.equal(sink.closed, true);
    sink.open({});
    sink.write('data: 1\n\n');
    await sink.drain(100);
    sink.end();
    sink.end();
    sink.onClose(() => (closed += 1));
    assert.equal(closed, 2, 'each close listener ran once, a late one at once');
    await settle();
    assert.deepEqual(faults, []);
  });
});
