import type { ChatChunk, ChatCompletion, ChatRequest } from '../gateway/chat-types.ts';

export interface ProviderCall {
  request: ChatRequest;
  /** The model name the upstream knows. */
  upstreamModel: string;
  /** Aborts the upstream request (client gone, or the gateway gave up). */
  signal: AbortSignal;
  /** Used when the request sets no max_tokens but the upstream requires one (Anthropic). */
  defaultMaxTokens: number;
}

/** One upstream protocol: turns the canonical request into its wire format and its answers back. */
export interface Provider {
  readonly id: string;
  /** A whole answer; `model` is whatever the upstream said (the gateway puts the public id back). */
  complete(call: ProviderCall): Promise<ChatCompletion>;
  /** Streamed chunks, in upstream order; throws ProviderError on any failure, before or during the stream. */
  stream(call: ProviderCall): AsyncIterable<ChatChunk>;
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

  constructor(
    failure: ProviderFailure,
    message: string,
    options: { status?: number; retryAfterMs?: number | undefined; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.failure = failure;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
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
