import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { StreamSink } from '../gateway/stream-sink.ts';

/**
 * Server-Sent Events straight onto the socket: each write goes out as it is made, never buffered.
 * `baseHeaders` (the request id) go out with the headers the gateway opens the stream with.
 */
export function createSseSink(response: ServerResponse, baseHeaders: Record<string, string>): StreamSink {
  const listeners: (() => void)[] = [];
  let closed = false;
  response.on('close', () => {
    if (response.writableFinished) return;
    closed = true;
    for (const listener of listeners.splice(0)) listener();
  });
  return {
    open(headers) {
      response.writeHead(200, {
        ...baseHeaders,
        ...headers,
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
    },
    write(data) {
      return closed ? true : response.write(data);
    },
    async drain() {
      if (!closed) await Promise.race([once(response, 'drain'), once(response, 'close')]);
    },
    end() {
      if (!closed) response.end();
    },
    get closed() {
      return closed;
    },
    onClose(listener) {
      if (closed) listener();
      else listeners.push(listener);
    },
  };
}
