import { Pool, errors as undiciErrors, type Dispatcher } from 'undici';
import type { TimeoutsConfig } from '../core/config.ts';
import type { PassChunk } from '../core/raw-chunk.ts';
import { type PassThroughHandler, type PassThroughStream } from '../core/provider.ts';
import { ProviderError, statusError } from '../core/provider-error.ts';
import { parseSse, SseByteScanner, type SseEvent } from './sse.ts';

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Dispatcher.ResponseData['body'];
}

/** A keep-alive connection pool to one upstream, with its timeouts. */
export interface UpstreamClient {
  /** Sends a request whose answer is read as it arrives (a stream); the caller reads or releases the body. */
  post(
    path: string,
    headers: Record<string, string>,
    body: string,
    signal: AbortSignal,
  ): Promise<UpstreamResponse>;
  /**
   * Sends a request and reads its whole JSON answer. Rejects with a ProviderError: the upstream's own error
   * for a status other than 200, `protocol` for a body that is not JSON or is over 16 MiB.
   */
  postJson(
    path: string,
    headers: Record<string, string>,
    body: string,
    signal: AbortSignal,
  ): Promise<unknown>;
  /** As postJson, with the answer's text beside its parse (to pass the upstream's own JSON on). */
  postJsonText(
    path: string,
    headers: Record<string, string>,
    body: string,
    signal: AbortSignal,
  ): Promise<JsonAnswer>;
  /**
   * The pass-through fast path: sends a stream request and reads its events off undici's dispatch callbacks, with
   * no body stream and no promise per chunk. `decode` turns each event's data into a chunk, `DONE` for the
   * terminal event, or throws a ProviderError. Resolves once a read brought the first chunk; rejects with a
   * ProviderError for anything before that (an error status, a failure, a stream with no chunk).
   */
  postEvents(
    path: string,
    headers: Record<string, string>,
    body: string,
    signal: AbortSignal,
    decode: EventChunks,
  ): Promise<PassThroughStream>;
  close(): Promise<void>;
}

/** A whole JSON answer: its parse, and the text it was parsed from. */
export interface JsonAnswer {
  value: unknown;
  text: string;
}

/** What `decode` answers for the stream's terminal event. */
export const DONE = Symbol('done');

/**
 * The fast path's reading of one event's data: its chunk; `DONE` for the terminal event; or undefined for an
 * event that makes no chunk. A protocol whose events do not map one to one onto chunks (a translating provider)
 * may push its chunks onto `out` (the read's chunks so far) itself and answer undefined, or `DONE` after pushing
 * the terminal event's own. Throws a ProviderError for an event that is not the protocol's.
 */
export type EventChunks = (data: Buffer, out: PassChunk[]) => PassChunk | typeof DONE | undefined;

/** The most of a whole (non-streamed) answer that is read: far above any model's longest completion. */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/** Creates the pool; connect, first-byte and idle-stream timeouts come from config. */
export function createUpstreamClient(baseUrl: string, timeouts: TimeoutsConfig): UpstreamClient {
  const url = new URL(baseUrl);
  const prefix = url.pathname.replace(/\/$/, '');
  const pool = new Pool(url.origin, {
    connect: { timeout: timeouts.connectMs },
    headersTimeout: timeouts.firstByteMs,
    bodyTimeout: timeouts.idleStreamMs,
    keepAliveTimeout: 30_000,
    connections: 256,
    pipelining: 1,
  });
  const requestOf = (path: string, headers: Record<string, string>, body: string) => ({
    path: `${prefix}${path}`,
    method: 'POST' as const,
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  return {
    async post(path, headers, body, signal) {
      try {
        const response = await pool.request({ ...requestOf(path, headers, body), signal });
        // The body is ours from here: its errors are handled here, where it is created. A reader sees each
        // failure through its own iterator or text(); this listener makes sure an error nobody is reading
        // at that moment (a release, an abort between reads, a timeout) never reaches the process.
        response.body.on('error', ignoreBodyError);
        return { status: response.statusCode, headers: response.headers, body: response.body };
      } catch (error) {
        throw toProviderError(error, signal);
      }
    },
    postJson: (path, headers, body, signal) =>
      new Promise((resolve, reject) =>
        readJson(pool, requestOf(path, headers, body), signal, (value) => resolve(value), reject),
      ),
    postJsonText: (path, headers, body, signal) =>
      new Promise((resolve, reject) =>
        readJson(
          pool,
          requestOf(path, headers, body),
          signal,
          (value, text) => resolve({ value, text }),
          reject,
        ),
      ),
    postEvents(path, headers, body, signal, decode) {
      return new Promise((resolve, reject) => {
        if (signal.aborted) return reject(toProviderError(signal.reason, signal));
        const reader = new EventReader(signal, decode, resolve, reject);
        signal.addEventListener('abort', reader.onAbort, { once: true });
        pool.dispatch(requestOf(path, headers, body), reader);
      });
    },
    close: () => pool.close(),
  };
}

/**
 * Sends a request and reads its whole JSON answer with a dispatch handler: `resolve` gets the parse and its text;
 * `reject` a ProviderError (the upstream's own error for a status other than 200, `protocol` for a body that is
 * not JSON or is over 16 MiB, the transport's failure mapped by toProviderError).
 */
function readJson(
  pool: Pool,
  request: Dispatcher.DispatchOptions,
  signal: AbortSignal,
  resolve: (value: unknown, text: string) => void,
  reject: (error: ProviderError) => void,
): void {
  // Read with a dispatch handler rather than a body stream: a whole answer needs no stream machinery,
  // which cost more CPU than the rest of the upstream call (docs/performance.md).
  const chunks: Buffer[] = [];
  let length = 0;
  let status = 0;
  let answerHeaders: UpstreamResponse['headers'] = {};
  let controller: Dispatcher.DispatchController | undefined;
  const onAbort = (): void => controller?.abort(new Error('request aborted'));
  const settle = (): void => signal.removeEventListener('abort', onAbort);
  if (signal.aborted) return reject(toProviderError(signal.reason, signal));
  // No `once`: the listener is removed as the answer settles, and a signal aborts once.
  signal.addEventListener('abort', onAbort);
  pool.dispatch(request, {
    onRequestStart(started) {
      controller = started;
      if (signal.aborted) started.abort(new Error('request aborted'));
    },
    onResponseStart(_controller, statusCode, responseHeaders) {
      status = statusCode;
      answerHeaders = responseHeaders;
    },
    onResponseData(reading, chunk) {
      length += chunk.length;
      if (length <= MAX_ANSWER_BYTES) chunks.push(chunk);
      else reading.abort(new ProviderError('protocol', 'upstream answer is too large'));
    },
    onResponseEnd() {
      settle();
      const text = chunks.length === 1 ? chunks[0]!.toString() : Buffer.concat(chunks).toString();
      if (status !== 200) return reject(errorFromAnswer(status, answerHeaders, text));
      try {
        resolve(JSON.parse(text), text);
      } catch (error) {
        reject(new ProviderError('protocol', 'upstream answered with malformed JSON', { cause: error }));
      }
    },
    onResponseError(_controller, error) {
      settle();
      reject(toProviderError(error, signal));
    },
  });
}

/** What is read off a stream after its terminal event before the connection is given up rather than reused. */
const MAX_BYTES_AFTER_END = 64 * 1024;
/** The most of an error answer that is read. */
const MAX_ERROR_BYTES = 16 * 1024;

/**
 * One pass-through stream, as undici's dispatch handler: each read is scanned for events, decoded, and handed over
 * in one batch. Before the first chunk it settles the `postEvents` promise; after it, it calls the stream's
 * handler (chunks read while there is none yet, or while it is paused, wait in `#queued`).
 */
class EventReader implements Dispatcher.DispatchHandler, PassThroughStream {
  first: PassChunk[] = [];
  readonly #signal: AbortSignal;
  readonly #decode: EventChunks;
  #resolve: ((stream: PassThroughStream) => void) | undefined;
  readonly #reject: (error: ProviderError) => void;
  readonly #scanner = new SseByteScanner();
  #controller: Dispatcher.DispatchController | undefined;
  #status = 0;
  #headers: UpstreamResponse['headers'] = {};
  #errorChunks: Buffer[] = [];
  #errorBytes = 0;
  #handler: PassThroughHandler | undefined;
  #queued: PassChunk[] = [];
  #paused = false;
  /** The stream's outcome is known: its terminal event came, or it failed. */
  #over = false;
  #failure: ProviderError | undefined;
  #ended = false;
  #bytesAfterEnd = 0;
  /** Set while one read is scanned. */
  #batch: PassChunk[] = [];
  #readFailure: ProviderError | undefined;
  #readDone = false;
  /** A microtask will hand over the batch. */
  #settling = false;
  readonly #settleReadLater = (): void => {
    this.#settling = false;
    if (!this.#over) this.#settleRead();
  };

  constructor(
    signal: AbortSignal,
    decode: EventChunks,
    resolve: (stream: PassThroughStream) => void,
    reject: (error: ProviderError) => void,
  ) {
    this.#signal = signal;
    this.#decode = decode;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  readonly onAbort = (): void => this.#controller?.abort(new ProviderError('aborted', 'request aborted'));

  start(handler: PassThroughHandler): void {
    this.#handler = handler;
    this.resume();
  }

  /** The upstream call is let go of by the call's abort signal, which the caller holds. */
  stop(): void {}

  resume(): void {
    this.#paused = false;
    if (this.#queued.length > 0) {
      const batch = this.#queued;
      this.#queued = [];
      if (!this.#handler!.batch(batch)) {
        this.#paused = true;
        this.#controller?.pause();
        return;
      }
    }
    if (this.#over) this.#end();
    else this.#controller?.resume();
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#signal.aborted) controller.abort(new ProviderError('aborted', 'request aborted'));
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: UpstreamResponse['headers'],
  ): void {
    this.#status = statusCode;
    this.#headers = headers;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#status !== 200) {
      // An error answer: its start is enough (an error page can be any size).
      if (this.#errorBytes < MAX_ERROR_BYTES) this.#errorChunks.push(chunk);
      this.#errorBytes += chunk.length;
      if (this.#errorBytes >= MAX_ERROR_BYTES) {
        this.#rejectWithAnswer();
        controller.abort(new ProviderError('protocol', 'error answer read'));
      }
      return;
    }
    if (this.#over) {
      // After the terminal event only the answer's end is awaited, so that the connection is reused.
      this.#bytesAfterEnd += chunk.length;
      if (this.#bytesAfterEnd > MAX_BYTES_AFTER_END)
        controller.abort(new Error('stream went on after its end'));
      return;
    }
    try {
      this.#scanner.push(chunk, this.#onEvent);
    } catch (error) {
      this.#readFailure = toProviderError(error, this.#signal);
    }
    // The terminal event or a failure settles at once (nothing after it is read). Chunks wait for the end of
    // the socket read that brought them: undici hands over each piece of the chunked encoding on its own (an
    // upstream that writes each event as one piece makes that one call per event), all from one parse of the
    // read, and a microtask runs right after that parse. So what one read brought goes out in one write,
    // without waiting for anything that has not arrived.
    if (this.#readFailure !== undefined || this.#readDone) this.#settleRead();
    else if (!this.#settling && this.#batch.length > 0) {
      this.#settling = true;
      queueMicrotask(this.#settleReadLater);
    }
  }

  onResponseEnd(): void {
    this.#signal.removeEventListener('abort', this.onAbort);
    if (this.#status !== 200) return this.#rejectWithAnswer();
    if (this.#over) return;
    this.#scanner.finish(this.#onEvent);
    if (!this.#readDone && this.#readFailure === undefined)
      this.#readFailure = new ProviderError('protocol', 'upstream stream ended without [DONE]');
    this.#settleRead();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.#signal.removeEventListener('abort', this.onAbort);
    // Chunks the same read brought before the failure still go first.
    if (!this.#over && this.#batch.length > 0) this.#settleRead();
    if (this.#over) return;
    this.#fail(toProviderError(error, this.#signal));
  }

  readonly #onEvent = (data: Buffer): boolean => {
    try {
      const chunk = this.#decode(data, this.#batch);
      if (chunk === DONE) {
        this.#readDone = true;
        return false;
      }
      if (chunk !== undefined) this.#batch.push(chunk);
      return true;
    } catch (error) {
      this.#readFailure = toProviderError(error, this.#signal);
      return false;
    }
  };

  /** Hands over what one read completed, then its terminal event or failure, in that order. */
  #settleRead(): void {
    const batch = this.#batch;
    if (batch.length > 0) {
      this.#batch = [];
      if (this.#resolve !== undefined) {
        this.first = batch;
        const resolve = this.#resolve;
        this.#resolve = undefined;
        resolve(this);
      } else if (this.#handler === undefined || this.#paused || this.#queued.length > 0) {
        // Nobody to take them yet (or not keeping up): they wait, and the upstream waits with them.
        for (const chunk of batch) this.#queued.push(chunk);
        this.#controller?.pause();
      } else if (!this.#handler.batch(batch)) {
        this.#paused = true;
        this.#controller?.pause();
      }
    }
    if (this.#readFailure !== undefined) {
      const failure = this.#readFailure;
      this.#readFailure = undefined;
      this.#fail(failure);
      // The upstream call is given up: a stream that broke is not read further.
      this.#controller?.abort(failure);
    } else if (this.#readDone) {
      this.#readDone = false;
      this.#over = true;
      if (this.#resolve !== undefined) this.#fail(new ProviderError('protocol', 'upstream stream was empty'));
      else this.#end();
    }
  }

  #fail(failure: ProviderError): void {
    if (this.#over && this.#failure !== undefined) return;
    this.#over = true;
    this.#failure = failure;
    if (this.#resolve !== undefined) {
      this.#resolve = undefined;
      this.#reject(failure);
    } else this.#end();
  }

  /** Tells the handler the stream is over, once it has taken every chunk. */
  #end(): void {
    if (this.#ended || this.#handler === undefined || this.#paused || this.#queued.length > 0) return;
    this.#ended = true;
    this.#handler.end(this.#failure);
  }

  #rejectWithAnswer(): void {
    if (this.#resolve === undefined) return;
    this.#resolve = undefined;
    this.#over = true;
    const text = Buffer.concat(this.#errorChunks).toString().slice(0, 4096);
    this.#reject(errorFromAnswer(this.#status, this.#headers, text));
  }
}

/** A stream event's JSON data; a `protocol` ProviderError when it is not JSON (the caller checks its shape). */
export function parseEventData(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch (error) {
    throw new ProviderError('protocol', 'upstream sent a malformed stream event', { cause: error });
  }
}

/**
 * The server-sent events of a streamed answer. Stopping early does not destroy the body (a for-await on it
 * would): `releaseBody` decides whether the connection is kept or closed.
 */
export function readEvents(response: UpstreamResponse): AsyncGenerator<SseEvent> {
  return parseSse(response.body.iterator({ destroyOnReturn: false }));
}

/** The body's own failures reach its reader; what is left over once nobody reads is of no interest. */
function ignoreBodyError(): void {}

/**
 * Lets go of a stream's body; safe to call more than once and after the body failed or was aborted. After its terminal event the rest (the chunked encoding's last chunk) is
 * read off so the connection goes back to the pool; destroying it there would cost a new connection on
 * the next request. A body left mid-way (client gone, failure) is destroyed, which closes the upstream call.
 */
export function releaseBody(body: UpstreamResponse['body'], finished: boolean): void {
  if (body.destroyed || body.readableEnded) return;
  if (finished) body.dump({ limit: 64 * 1024 }).catch(ignoreBodyError);
  else body.destroy();
}

/** Transport errors raised before any byte of a request reached the upstream. */
const NEVER_REACHED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** Maps a transport error (refused, reset, timed out, aborted) to a ProviderError. */
export function toProviderError(error: unknown, signal?: AbortSignal): ProviderError {
  if (error instanceof ProviderError) return error;
  if (signal?.aborted) return new ProviderError('aborted', 'request aborted', { cause: error });
  if (error instanceof undiciErrors.ConnectTimeoutError)
    return new ProviderError('timeout', 'upstream connect timed out', { cause: error, beforeSend: true });
  if (error instanceof undiciErrors.HeadersTimeoutError)
    return new ProviderError('timeout', 'upstream sent no answer in time', { cause: error });
  if (error instanceof undiciErrors.BodyTimeoutError)
    return new ProviderError('timeout', 'upstream stream went idle', { cause: error });
  const code = (error as { code?: string }).code ?? '';
  return new ProviderError('connect', `upstream connection failed (${code || (error as Error).name})`, {
    cause: error,
    beforeSend: NEVER_REACHED.has(code),
  });
}

/**
 * Reads an error answer off a response (its first 16 KiB: an error page can be any size) and turns it into a
 * ProviderError carrying the upstream's own message.
 */
export async function errorFromResponse(response: UpstreamResponse): Promise<ProviderError> {
  const chunks: Buffer[] = [];
  let length = 0;
  try {
    // Leaving the loop early destroys the body, which closes the connection: an error answer is rare.
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      length += chunk.length;
      if (length >= 16 * 1024) break;
    }
  } catch {
    // What arrived is all there is.
  }
  return errorFromAnswer(response.status, response.headers, Buffer.concat(chunks).toString().slice(0, 4096));
}

/** An error answer (status, headers, body text) as a ProviderError: the upstream's message, its retry delay. */
function errorFromAnswer(status: number, headers: UpstreamResponse['headers'], text: string): ProviderError {
  let message: string;
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const inner = parsed.error;
    message =
      typeof inner === 'string'
        ? inner
        : typeof inner?.message === 'string'
          ? inner.message
          : typeof parsed.message === 'string'
            ? parsed.message
            : text;
  } catch {
    message = text;
  }
  const header = headers['retry-after-ms'];
  const retryAfterMsHeader = Array.isArray(header) ? header[0] : header;
  const error = statusError(
    status,
    message.slice(0, 500) || `upstream status ${status}`,
    headers['retry-after'],
  );
  if (retryAfterMsHeader !== undefined && Number.isFinite(Number(retryAfterMsHeader))) {
    return new ProviderError('status', error.message, { status, retryAfterMs: Number(retryAfterMsHeader) });
  }
  return error;
}
