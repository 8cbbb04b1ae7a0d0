import { Agent, errors as undiciErrors, type Dispatcher } from 'undici';
import type { TimeoutsConfig } from '../config/config.ts';
import { ProviderError, statusError } from './provider.ts';
import { parseSse, type SseEvent } from './sse.ts';

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Dispatcher.ResponseData['body'];
}

/** A keep-alive connection pool to one upstream, with its timeouts. */
export interface UpstreamClient {
  post(
    path: string,
    headers: Record<string, string>,
    body: string,
    signal: AbortSignal,
  ): Promise<UpstreamResponse>;
  close(): Promise<void>;
}

/** Creates the pool; connect, first-byte and idle-stream timeouts come from config. */
export function createUpstreamClient(baseUrl: string, timeouts: TimeoutsConfig): UpstreamClient {
  const url = new URL(baseUrl);
  const origin = url.origin;
  const prefix = url.pathname.replace(/\/$/, '');
  const agent = new Agent({
    connect: { timeout: timeouts.connectMs },
    headersTimeout: timeouts.firstByteMs,
    bodyTimeout: timeouts.idleStreamMs,
    keepAliveTimeout: 30_000,
    connections: 256,
    pipelining: 1,
  });
  return {
    async post(path, headers, body, signal) {
      try {
        const response = await agent.request({
          origin,
          path: `${prefix}${path}`,
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body,
          signal,
        });
        return { status: response.statusCode, headers: response.headers, body: response.body };
      } catch (error) {
        throw toProviderError(error, signal);
      }
    },
    close: () => agent.close(),
  };
}

/**
 * The server-sent events of a streamed answer. Stopping early does not destroy the body (a for-await on it
 * would): `releaseBody` decides whether the connection is kept or closed.
 */
export function readEvents(response: UpstreamResponse): AsyncGenerator<SseEvent> {
  return parseSse(response.body.iterator({ destroyOnReturn: false }));
}

/**
 * Lets go of a stream's body. After its terminal event the rest (the chunked encoding's last chunk) is
 * read off so the connection goes back to the pool; destroying it there would cost a new connection on
 * the next request. A body left mid-way (client gone, failure) is destroyed, which closes the upstream call.
 */
export function releaseBody(body: UpstreamResponse['body'], finished: boolean): void {
  if (body.destroyed) return;
  if (finished) void body.dump({ limit: 64 * 1024 }).catch(() => {});
  else body.destroy();
}

/** Maps a transport error (refused, reset, timed out, aborted) to a ProviderError. */
export function toProviderError(error: unknown, signal?: AbortSignal): ProviderError {
  if (error instanceof ProviderError) return error;
  if (signal?.aborted) return new ProviderError('aborted', 'request aborted', { cause: error });
  if (error instanceof undiciErrors.ConnectTimeoutError)
    return new ProviderError('timeout', 'upstream connect timed out', { cause: error });
  if (error instanceof undiciErrors.HeadersTimeoutError)
    return new ProviderError('timeout', 'upstream sent no answer in time', { cause: error });
  if (error instanceof undiciErrors.BodyTimeoutError)
    return new ProviderError('timeout', 'upstream stream went idle', { cause: error });
  const code = (error as { code?: string }).code ?? '';
  return new ProviderError('connect', `upstream connection failed (${code || (error as Error).name})`, {
    cause: error,
  });
}

/** Reads an error answer and turns it into a ProviderError carrying the upstream's own message. */
export async function errorFromResponse(response: UpstreamResponse): Promise<ProviderError> {
  let message = '';
  try {
    const text = (await response.body.text()).slice(0, 4096);
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
  } catch {
    message = '';
  }
  const header = response.headers['retry-after-ms'];
  const retryAfterMsHeader = Array.isArray(header) ? header[0] : header;
  const error = statusError(
    response.status,
    message.slice(0, 500) || `upstream status ${response.status}`,
    response.headers['retry-after'],
  );
  if (retryAfterMsHeader !== undefined && Number.isFinite(Number(retryAfterMsHeader))) {
    return new ProviderError('status', error.message, {
      status: response.status,
      retryAfterMs: Number(retryAfterMsHeader),
    });
  }
  return error;
}

/** Reads a JSON answer; a body that is not JSON is a protocol failure (retryable elsewhere). */
export async function readJson(response: UpstreamResponse, signal: AbortSignal): Promise<unknown> {
  let text: string;
  try {
    text = await response.body.text();
  } catch (error) {
    throw toProviderError(error, signal);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ProviderError('protocol', 'upstream answered with malformed JSON', { cause: error });
  }
}
