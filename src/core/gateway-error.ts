import type { RateLimits } from './rate-limits.ts';

/** The spec's error codes, each with its HTTP status and the OpenAI-convention error type. */
export const ERROR_CODES = {
  invalid_request: { status: 400, type: 'invalid_request_error' },
  unauthorized: { status: 401, type: 'authentication_error' },
  payment_required: { status: 402, type: 'billing_error' },
  forbidden: { status: 403, type: 'permission_error' },
  model_not_found: { status: 404, type: 'invalid_request_error' },
  not_found: { status: 404, type: 'invalid_request_error' },
  method_not_allowed: { status: 405, type: 'invalid_request_error' },
  conflict: { status: 409, type: 'invalid_request_error' },
  rate_limit_exceeded: { status: 429, type: 'rate_limit_error' },
  internal_error: { status: 500, type: 'api_error' },
  provider_error: { status: 502, type: 'api_error' },
  service_unavailable: { status: 503, type: 'api_error' },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * What a 429 or 503 tells the client to wait when its cause names no delay of its own: every such answer
 * carries Retry-After and retry-after-ms, whichever code path made it.
 */
export const DEFAULT_RETRY_AFTER_MS = 1_000;

/** Whether answers of this status always say when to retry (429, 503). */
export const mustSayRetryAfter = (status: number): boolean => status === 429 || status === 503;

export interface ErrorBody {
  /** The spec's code, message and type, and OpenAI's `param`: the offending request field, or null. */
  error: { code: string; message: string; type: string; param: string | null };
}

/** A failure meant for the client: code, status and type come from the spec's table. */
export class GatewayError extends Error {
  override name = 'GatewayError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  /** Milliseconds a client should wait (429, 503): sent as Retry-After (whole seconds) and Retry-After-Ms. */
  readonly retryAfterMs: number | undefined;
  /** A rate-limit or credit refusal's view of the key's limits: the HTTP layer sends it as x-ratelimit-* headers. */
  readonly rateLimits: RateLimits | undefined;
  /** The request field at fault (`temperature`, `messages[2].role`), or null when no one field is. */
  readonly param: string | null;

  constructor(
    code: ErrorCode,
    message: string,
    options: {
      cause?: unknown;
      retryAfterMs?: number;
      status?: number;
      rateLimits?: RateLimits;
      param?: string;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = options.status ?? ERROR_CODES[code].status;
    this.type = ERROR_CODES[code].type;
    this.retryAfterMs =
      options.retryAfterMs ?? (mustSayRetryAfter(this.status) ? DEFAULT_RETRY_AFTER_MS : undefined);
    this.rateLimits = options.rateLimits;
    this.param = options.param ?? null;
  }

  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message, type: this.type, param: this.param } };
  }
}

/** A 400 `invalid_request`, naming the field it is about when there is one. */
export const invalid = (message: string, param?: string): GatewayError =>
  new GatewayError('invalid_request', message, param === undefined ? {} : { param });
