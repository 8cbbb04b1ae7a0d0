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
