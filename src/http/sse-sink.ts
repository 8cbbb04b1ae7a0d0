import type { ServerResponse } from 'node:http';
import type { StreamSink } from '../gateway/stream-sink.ts';

/**
 * Server-Sent Events straight onto the socket: each write goes out as it is made, never buffered.
 * `baseHeaders` (the request id) go out with the headers the gateway opens the stream with.
 */
export function createSseSink(response: ServerResponse, baseHeaders: Record<string, string>): StreamSink {
  const listeners: (() => void)[] = [];
  let closed = false;
  let ended = false;
  response.on('close', () => {
    if (response.writableFinished) return;
    closed = true;
    for (const listener of listeners.splice(0)) listener();
  });
  return {
    open(headers) {
      if (closed || response.headersSent) return;
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
      // A write after the end would be an 'error' event on the response: it is never made.
      return closed || ended ? true : response.write(data);
    },
    drain(timeoutMs) {
      if (closed || ended) return Promise.resolve();
      return new Promise((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          response.off('drain', done);
          response.off('close', done);
          resolve();
        };
        // The client took nothing for the idle time: cut it off (its 'close' ends the wait and the stream).
        const timer = setTimeout(() => response.destroy(), timeoutMs);
        response.on('drain', done);
        response.on('close', done);
      });
    },
    end() {
      if (closed || ended) return;
      ended = true;
      response.end();
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
