import type { ChatCompletion, ChatRequest } from '../gateway/chat-types.ts';
import type { PassChunk } from '../gateway/raw-chunk.ts';
import type { EventBatch } from '../gateway/stream-event.ts';

export interface ProviderCall {
  request: ChatRequest;
  /** The model name the upstream knows. */
  upstreamModel: string;
  /** Aborts the upstream request (client gone, or the gateway gave up). */
  signal: AbortSignal;
  /** Used when the request sets no max_tokens but the upstream requires one (Anthropic). */
  defaultMaxTokens: number;
  /** Headers this call adds to the provider's own (a trace's `traceparent`). */
  headers?: Readonly<Record<string, string>> | undefined;
  /** Whose request it is (the simulator keeps its prompt cache per account, as upstreams do per organisation). */
  account?: string | undefined;
}

/** The provider's headers with the call's own added (the same object when the call has none). */
export const callHeaders = (base: Record<string, string>, call: ProviderCall): Record<string, string> =>
  call.headers === undefined ? base : { ...base, ...call.headers };

/** One upstream protocol: turns the canonical request into its wire format and its answers back. */
export interface Provider {
  readonly id: string;
  /** A whole answer; `model` is whatever the upstream said (the gateway puts the public id back). */
  complete(call: ProviderCall): Promise<ChatCompletion>;
  /**
   * The answer as canonical events (stream-event.ts), in upstream order, one non-empty batch per upstream read;
   * throws ProviderError on any failure, before or during the stream.
   */
  stream(call: ProviderCall): AsyncIterable<EventBatch>;
  /**
   * The fast path, for an upstream that speaks chat completions itself: resolves once the first chunk arrived,
   * rejects with a ProviderError before that (as `stream` would throw). Absent when the upstream needs translation.
   */
  passThrough?(call: ProviderCall): Promise<PassThroughStream>;
  close(): Promise<void>;
}

export type ProviderFailure = 'connect' | 'timeout' | 'status' | 'protocol' | 'aborted';

/**
 * An upstream failure. `retryable`: another attempt (here or on another deployment) may succeed.
 * `clientFault`: the upstream rejected the request itself (a 400): retrying anywhere is pointless.
 */
export class ProviderError extends Error {
  override name = 'ProviderError';
  readonly failure: ProviderFailure;
  readonly status: number | undefined;
  readonly retryable: boolean;
  readonly clientFault: boolean;
  readonly retryAfterMs: number | undefined;
  /** The upstream was never reached (refused, unresolvable, connect timed out): no request could cause it. */
  readonly beforeSend: boolean;

  constructor(
    failure: ProviderFailure,
    message: string,
    options: {
      status?: number;
      retryAfterMs?: number | undefined;
      cause?: unknown;
      beforeSend?: boolean;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.failure = failure;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.beforeSend = options.beforeSend ?? false;
    const status = options.status ?? 0;
    this.clientFault = failure === 'status' && (status === 400 || status === 413 || status === 422);
    this.retryable = failure !== 'aborted' && !this.clientFault;
  }
}

/** An upstream's HTTP status as a ProviderError, with its Retry-After (seconds or HTTP date) when it sent one. */
export function statusError(
  status: number,
  message: string,
  retryAfter: string | string[] | undefined,
  now: number = Date.now(),
): ProviderError {
  const header = Array.isArray(retryAfter) ? retryAfter[0] : retryAfter;
  let retryAfterMs: number | undefined;
  if (header !== undefined) {
    const seconds = Number(header);
    retryAfterMs = Number.isFinite(seconds)
      ? seconds * 1000
      : Math.max(0, Date.parse(header) - now) || undefined;
  }
  return new ProviderError('status', message, { status, retryAfterMs });
}

/** Receives a pass-through stream's chunks as each upstream read completes them. */
export interface PassThroughHandler {
  /** The chunks one upstream read completed, in order; false pauses the stream until `resume()`. */
  chunks(batch: PassChunk[]): boolean;
  /** The stream is over: after its terminal event, or with the failure (a ProviderError). Called once. */
  end(failure: ProviderError | undefined): void;
}

/**
 * A stream whose upstream speaks the client's protocol (chat completions), read without an async step per chunk:
 * the first chunks are there when it opens, the rest go to the handler given to `start`.
 */
export interface PassThroughStream {
  /** The chunks of the read that brought the first one. */
  readonly first: PassChunk[];
  /** Hands everything after `first` to `handler`, as it arrives. */
  start(handler: PassThroughHandler): void;
  /** Goes on after `chunks` returned false. */
  resume(): void;
}
