import { once } from 'node:events';
import type { FastifyReply } from 'fastify';
import type { StreamSink } from '../gateway/stream-sink.ts';

/** Server-Sent Events straight onto the socket: each write goes out as it is made, never buffered. */
export function createSseSink(reply: FastifyReply): StreamSink {
  const response = reply.raw;
  const listeners: (() => void)[] = [];
  let closed = false;
  response.on('close', () => {
    if (response.writableFinished) return;
    closed = true;
    for (const listener of listeners.splice(0)) listener();
  });
  return {
    open(headers) {
      reply.hijack();
      response.writeHead(200, {
        ...(reply.getHeaders() as Record<string, string>),
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
