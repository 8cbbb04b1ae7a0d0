import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ChatChunk } from '../core/chat-types.ts';
import { ownBytes, type PassChunk, RawChunk } from '../core/raw-chunk.ts';
import type { ToolEvent } from '../core/stream-event.ts';
import { answerHeaders } from './answer-headers.ts';
import { createDoorSink } from './door-sink.ts';
import type { StreamSink, TextSink } from '../gateway/stream-sink.ts';

/**
 * Server-Sent Events straight onto the socket: each write goes out as it is made, never buffered.
 * `baseHeaders` (the request id) go out with the headers the stream is opened with.
 */
export function createSseSink(response: ServerResponse, baseHeaders: Record<string, string>): TextSink {
  return new SseSink(response, baseHeaders);
}

/**
 * The text sink of one response, as a class: its methods are shared, and a stream allocates its few fields and
 * one close listener rather than a closure per method.
 */
class SseSink implements TextSink {
  readonly #response: ServerResponse;
  readonly #baseHeaders: Record<string, string>;
  #listeners: (() => void)[] | undefined;
  #closed = false;
  #ended = false;
  /** A write went through the response (the head with it): bytes may now be written to the socket themselves. */
  #direct = false;

  constructor(response: ServerResponse, baseHeaders: Record<string, string>) {
    this.#response = response;
    this.#baseHeaders = baseHeaders;
    response.on('close', () => {
      const listeners = this.#listeners;
      this.#listeners = undefined;
      if (response.writableFinished) return;
      this.#closed = true;
      if (listeners !== undefined) for (const listener of listeners) listener();
    });
  }

  open(headers: Record<string, string>): void {
    const response = this.#response;
    if (this.#closed || response.headersSent) return;
    response.writeHead(200, {
      ...this.#baseHeaders,
      ...headers,
      'content-type': 'text/event-stream; charset=utf-8',
      'x-content-type-options': 'nosniff',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
  }

  write(data: string | Buffer): boolean {
    // A write after the end would be an 'error' event on the response: it is never made.
    if (this.#closed || this.#ended) return true;
    const response = this.#response;
    if (typeof data !== 'string' && this.#direct) {
      const socket = response.socket;
      if (socket !== null && canWriteDirect(response, socket)) return socket.write(framed(data));
    }
    const written = response.write(data);
    // Once the head went out with a first write, bytes can go to the socket as they are (see canWriteDirect).
    this.#direct = true;
    return written;
  }

  drain(timeoutMs: number): Promise<void> {
    if (this.#closed || this.#ended) return Promise.resolve();
    const response = this.#response;
    return new Promise((resolve) => {
      // A direct write that filled the socket's buffer is drained by the socket (the response's 'drain' follows
      // only its own writes): both are waited for, whichever comes.
      const socket = response.socket;
      const done = (): void => {
        clearTimeout(timer);
        response.off('drain', done);
        response.off('close', done);
        socket?.off('drain', done);
        resolve();
      };
      // The client took nothing for the idle time: cut it off (its 'close' ends the wait and the stream).
      const timer = setTimeout(() => response.destroy(), timeoutMs);
      response.on('drain', done);
      response.on('close', done);
      socket?.on('drain', done);
    });
  }

  end(): void {
    if (this.#closed || this.#ended) return;
    this.#ended = true;
    this.#response.end();
  }

  endWith(last: string): void {
    if (this.#closed || this.#ended) return;
    this.#ended = true;
    this.#response.end(last);
  }

  get closed(): boolean {
    return this.#closed;
  }

  onClose(listener: () => void): void {
    if (this.#closed) listener();
    else (this.#listeners ??= []).push(listener);
  }
}

/**
 * Whether a body piece can go to the socket as one chunk of the chunked encoding that the response would have
 * framed itself: `response.write` frames each piece with four socket writes (size, CRLF, piece, CRLF) that the
 * socket's writable stream buffers under a cork until the next tick and sends with `writev`, which costs more CPU
 * than the rest of a streamed chunk's relay; one `socket.write` of the framed piece is one `write`. Only for a
 * response that has its socket (a pipelined request's answer has none, and waits in the response, until the one
 * before it ends) with nothing of its own buffered, chunked, not corked, not ended: anything else goes through
 * `response.write`. The head must have gone out before: the caller writes its first piece through the response.
 */
function canWriteDirect(response: ServerResponse, socket: Socket): boolean {
  return (
    response.chunkedEncoding &&
    !response.writableEnded &&
    response.writableCorked === 0 &&
    (response as ServerResponse & { outputData: unknown[] }).outputData.length === 0 &&
    socket.writable
  );
}

/** A piece as one chunk of the chunked transfer encoding: its size in hex, CRLF, the piece, CRLF. */
function framed(piece: Buffer): Buffer {
  const size = piece.length;
  let digits = 1;
  while (size >= 16 ** digits) digits++;
  const out = Buffer.allocUnsafe(digits + 4 + size);
  for (let i = digits - 1, rest = size; i >= 0; i--, rest >>>= 4) out[i] = HEX[rest & 15]!;
  out[digits] = 0x0d;
  out[digits + 1] = 0x0a;
  out.set(piece, digits + 2);
  out[digits + 2 + size] = 0x0d;
  out[digits + 3 + size] = 0x0a;
  return out;
}

const HEX = Buffer.from('0123456789abcdef');

/**
 * The chat-completions front door's encoder. Canonical events become chunks, each one `data:` line: `start` the
 * role chunk, `text` a content delta, `tool` a tool-call delta, `finish` the finish reason, `usage` the usage chunk
 * (only when the client asked for it, `stream_options.include_usage`, and once); `[DONE]` at the end; an upstream
 * failure mid-way as one error event, without `[DONE]`. Every chunk's `"id"…"choices":` head is made once per stream
 * (at `start`: id, created, the public model) and each chunk is that head and a template around its one variable
 * value, and what one upstream read brought goes out in one write. On the fast path a raw chunk's bytes are copied
 * with only its `model` value replaced (and `"usage":null` left out for a client that did not ask for usage), and a
 * parsed one is written as it came but for `model`.
 */
export function chatCompletionsSink(text: TextSink, includeUsage: boolean, answerModel: string): StreamSink {
  let first: PassChunk | undefined;
  let forwardedUsage = false;
  /** `[DONE]`, once the answer is whole, when the text sink can write it with the end of the body. */
  let done: string | undefined;
  let model: string | undefined;
  let modelBytes = EMPTY;
  /** The canonical chunks' common start, `data: {"id":…,"model":…,"choices":`, once the stream's start came. */
  let head = '';
  const modelJson = JSON.stringify(answerModel);
  const headOf = (id: string, created: number): string =>
    `data: {"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${created},"model":${modelJson},"choices":`;
  /** A parsed chunk's event, or undefined when it is not for this client. */
  const encode = (chunk: ChatChunk): string | undefined => {
    if (!includeUsage) {
      if (chunk.choices.length === 0) return undefined;
      if ('usage' in chunk) delete chunk.usage;
    } else if (isUsage(chunk.usage)) {
      // The upstream's usage goes out as it sent it (on its own chunk or on the last content chunk), once.
      forwardedUsage = true;
    }
    return `data: ${JSON.stringify(chunk)}\n\n`;
  };
  return createDoorSink(text, {
    open: (facts) => text.open(answerHeaders(facts)),
    events(batch) {
      let out = '';
      for (const event of batch) {
        if (event.type === 'start') head = headOf(event.id, event.created);
        else if (head === '') head = headOf('', Math.floor(Date.now() / 1000));
        switch (event.type) {
          case 'start':
            out += `${head}[{"index":0,"delta":{"role":"assistant","content":""}${OPEN_CHOICE_END}`;
            break;
          case 'text':
            out += `${head}[{"index":0,"delta":{"content":${JSON.stringify(event.text)}}${OPEN_CHOICE_END}`;
            break;
          case 'tool':
            out += `${head}[{"index":0,"delta":{"tool_calls":[${toolCallJson(event)}]}${OPEN_CHOICE_END}`;
            break;
          case 'finish':
            out += `${head}[{"index":0,"delta":{},"finish_reason":"${event.reason}"}]}\n\n`;
            break;
          case 'usage':
            if (!includeUsage) break;
            forwardedUsage = true;
            out += `${head}[],"usage":${JSON.stringify(event.usage)}}\n\n`;
            break;
        }
      }
      return out === '' || text.write(out);
    },
    passThrough(batch, publicModel) {
      if (publicModel !== model) {
        model = publicModel;
        // Kept to the stream's end: bytes of their own, not a slice of Buffer's pool.
        modelBytes = ownBytes(JSON.stringify(publicModel));
      }
      first ??= batch[0];
      const cutUsage = !includeUsage;
      // Two passes: the size of what goes out, then one buffer of exactly that size, copied into. Parsed chunks
      // (rare: usage, tool calls, anything unusual) are encoded in the first pass, raw ones copied in the second.
      let size = 0;
      /** What a raw chunk needs beyond its own event while it is copied (see copyRawEvent), the most of any. */
      let slack = 0;
      let events: (string | undefined)[] | undefined;
      for (let i = 0; i < batch.length; i++) {
        const chunk = batch[i]!;
        if (chunk instanceof RawChunk) {
          const eventSize = rawEventSize(chunk, modelBytes, cutUsage);
          size += eventSize;
          slack = Math.max(slack, chunk.bytes.length + EVENT_FRAME - eventSize);
        } else {
          const event = encode(chunk);
          (events ??= new Array<string | undefined>(batch.length))[i] = event;
          if (event !== undefined) size += Buffer.byteLength(event);
        }
      }
      if (size === 0) return true;
      const out = Buffer.allocUnsafe(size + slack);
      let at = 0;
      for (let i = 0; i < batch.length; i++) {
        const chunk = batch[i]!;
        if (chunk instanceof RawChunk) at = copyRawEvent(out, at, chunk, modelBytes, cutUsage);
        else if (events![i] !== undefined) at += out.write(events![i]!, at);
      }
      return text.write(slack === 0 ? out : out.subarray(0, size));
    },
    complete(usage) {
      if (includeUsage && !forwardedUsage) {
        if (head !== '') text.write(`${head}[],"usage":${JSON.stringify(usage)}}\n\n`);
        else if (first !== undefined) {
          const {
            id,
            created,
            model: firstModel,
          } = first instanceof RawChunk ? parsedRaw(first, model) : first;
          text.write(
            `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: firstModel, choices: [], usage })}\n\n`,
          );
        }
      }
      if (text.endWith) done = DONE_EVENT;
      else text.write(DONE_EVENT);
    },
    fail: (error) => void text.write(`data: ${JSON.stringify(error.toBody())}\n\n`),
    end: () => (done === undefined ? text.end() : text.endWith!(done)),
  });
}

/** The end of a chunk's one choice that has not finished, and of the chunk. */
const OPEN_CHOICE_END = ',"finish_reason":null}]}\n\n';

/** A tool-call delta: its first piece with id, type and name, a later one with its argument fragment only. */
const toolCallJson = (event: ToolEvent): string =>
  event.id === undefined
    ? `{"index":${event.index},"function":{"arguments":${JSON.stringify(event.args)}}}`
    : `{"index":${event.index},"id":${JSON.stringify(event.id)},"type":"function","function":{"name":${JSON.stringify(event.name ?? '')},"arguments":${JSON.stringify(event.args)}}}`;

const EMPTY = Buffer.alloc(0);
const DONE_EVENT = 'data: [DONE]\n\n';
const DATA_PREFIX = Buffer.from('data: ');
const EVENT_END = Buffer.from('\n\n');

/** The bytes of a raw chunk's event: `data: `, the chunk with its model replaced (and its usage cut), two LFs. */
function rawEventSize(chunk: RawChunk, model: Buffer, cutUsage: boolean): number {
  const cut = cutUsage && chunk.usageStart !== -1 ? chunk.usageEnd - chunk.usageStart : 0;
  return (
    DATA_PREFIX.length +
    chunk.bytes.length -
    (chunk.modelEnd - chunk.modelStart) +
    model.length -
    cut +
    EVENT_END.length
  );
}

/** `data: ` and the two LFs around a raw chunk's bytes. */
const EVENT_FRAME = 8;

/**
 * Copies a raw chunk's event into `out` at `at` (see rawEventSize); returns where it ends. The chunk's bytes are
 * copied whole, then what follows the usage cut and the model is moved into place within `out`, and the model
 * written: a typed array's `set` and `copyWithin` cost a fraction of `Buffer.copy`'s native call per piece. So `out`
 * must have room for the chunk's bytes as they came after `at` (the caller's slack, when the event is shorter).
 */
function copyRawEvent(out: Buffer, at: number, chunk: RawChunk, model: Buffer, cutUsage: boolean): number {
  const bytes = chunk.bytes;
  // `data: ` and the two LFs, and the model value, are a few bytes: set one by one, cheaper than a native copy.
  out[at] = 0x64; // d
  out[at + 1] = 0x61; // a
  out[at + 2] = 0x74; // t
  out[at + 3] = 0x61; // a
  out[at + 4] = 0x3a; // :
  out[at + 5] = 0x20; // space
  at += 6;
  out.set(bytes, at);
  let end = at + bytes.length;
  let { modelStart, modelEnd } = chunk;
  const { usageStart, usageEnd } = chunk;
  if (cutUsage && usageStart !== -1) {
    const cut = usageEnd - usageStart;
    out.copyWithin(at + usageStart, at + usageEnd, end);
    end -= cut;
    if (usageStart < modelStart) {
      modelStart -= cut;
      modelEnd -= cut;
    }
  }
  if (model.length !== modelEnd - modelStart) {
    out.copyWithin(at + modelStart + model.length, at + modelEnd, end);
    end += model.length - (modelEnd - modelStart);
  }
  put(out, at + modelStart, model);
  out[end] = 0x0a;
  out[end + 1] = 0x0a;
  return end + 2;
}

/** Copies `from` into `out` at `at`; returns where it ends. */
function put(out: Buffer, at: number, from: Buffer): number {
  if (from.length > 64) return at + from.copy(out, at);
  for (let i = 0; i < from.length; i++) out[at + i] = from[i]!;
  return at + from.length;
}

/** The first chunk's id and creation time, read when a usage chunk must be made up for it (rare). */
function parsedRaw(chunk: RawChunk, model: string | undefined): Pick<ChatChunk, 'id' | 'created' | 'model'> {
  const { id, created } = JSON.parse(chunk.bytes.toString()) as ChatChunk;
  return { id, created, model: model ?? '' };
}

const isUsage = (value: unknown): boolean => {
  const usage = value as { prompt_tokens?: unknown; completion_tokens?: unknown } | null | undefined;
  return typeof usage?.prompt_tokens === 'number' && typeof usage.completion_tokens === 'number';
};
