import type { ServerResponse } from 'node:http';
import type { ChatChunk } from '../gateway/chat-types.ts';
import type { StreamSink, TextSink } from '../gateway/stream-sink.ts';

/**
 * Server-Sent Events straight onto the socket: each write goes out as it is made, never buffered.
 * `baseHeaders` (the request id) go out with the headers the gateway opens the stream with.
 */
export function createSseSink(response: ServerResponse, baseHeaders: Record<string, string>): TextSink {
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

/**
 * The chat-completions front door's encoder: each chunk as one `data:` line, as the upstream sent it (but for the
 * public model id); the usage chunk only when the client asked for it (`stream_options.include_usage`), once;
 * `[DONE]` at the end; an upstream failure mid-way as one error event, without `[DONE]`.
 */
export function chatCompletionsSink(text: TextSink, includeUsage: boolean): StreamSink {
  let first: ChatChunk | undefined;
  let forwardedUsage = false;
  return {
    open: (headers) => text.open(headers),
    chunk(chunk) {
      first ??= chunk;
      if (!includeUsage) {
        if (chunk.choices.length === 0) return true;
        if ('usage' in chunk) delete chunk.usage;
      } else if (isUsage(chunk.usage)) {
        // The upstream's usage goes out as it sent it (on its own chunk or on the last content chunk), once.
        forwardedUsage = true;
      }
      return text.write(`data: ${JSON.stringify(chunk)}\n\n`);
    },
    complete(usage) {
      if (includeUsage && !forwardedUsage && first !== undefined)
        text.write(
          `data: ${JSON.stringify({ id: first.id, object: 'chat.completion.chunk', created: first.created, model: first.model, choices: [], usage })}\n\n`,
        );
      text.write('data: [DONE]\n\n');
    },
    fail: (error) => void text.write(`data: ${JSON.stringify(error.toBody())}\n\n`),
    drain: (timeoutMs) => text.drain(timeoutMs),
    end: () => text.end(),
    get closed() {
      return text.closed;
    },
    onClose: (listener) => text.onClose(listener),
  };
}

const isUsage = (value: unknown): boolean => {
  const usage = value as { prompt_tokens?: unknown; completion_tokens?: unknown } | null | undefined;
  return typeof usage?.prompt_tokens === 'number' && typeof usage.completion_tokens === 'number';
};
