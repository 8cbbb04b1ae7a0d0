import { CliError, EXIT } from './cli-error.ts';

/** How long one admin request may wait for the gateway's answer headers before it counts as unreachable. */
const REQUEST_TIMEOUT_MS = 30_000;

export interface AdminClientOptions {
  /** The gateway's base address, e.g. http://127.0.0.1:8080. */
  url: string;
  /** The admin key (or an operator's API key); undefined fails every call with a clear message. */
  key: string | undefined;
  fetch?: typeof fetch;
}

export interface AdminClient {
  /** Sends one JSON request; resolves to the parsed answer, throws CliError on any failure. */
  request(method: string, path: string, body?: unknown): Promise<unknown>;
  /** Opens a streamed GET; resolves once the gateway answered 2xx, with the body still unread. */
  stream(path: string): Promise<Response>;
}

/** Talks to a running gateway's admin API with the admin key; maps every failure to one clear CliError. */
export function createAdminClient(options: AdminClientOptions): AdminClient {
  const base = parseBaseUrl(options.url);
  const doFetch = options.fetch ?? fetch;

  async function send(method: string, path: string, body?: unknown): Promise<Response> {
    if (!options.key)
      throw new CliError(
        'no admin key: set TOLLGATE_ADMIN_KEY to the admin key the gateway printed at its first start',
        EXIT.refused,
      );
    const headers: Record<string, string> = { authorization: `Bearer ${options.key}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const target = new URL(path, base);
    const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
    let response: Response;
    try {
      response = await doFetch(target, {
        method,
        headers,
        signal: timeout,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    } catch (error) {
      throw new CliError(
        `cannot reach the gateway at ${base.origin}: ${describeNetworkError(error)}`,
        EXIT.unreachable,
        {
          cause: error,
        },
      );
    }
    if (response.ok) return response;
    throw await answerError(response, base);
  }

  return {
    async request(method, path, body) {
      const response = await send(method, path, body);
      const text = await response.text();
      if (text === '') return null;
      try {
        return JSON.parse(text) as unknown;
      } catch (error) {
        throw new CliError(
          `the gateway at ${base.origin} answered ${method} ${path} with something that is not JSON`,
          EXIT.failed,
          {
            cause: error,
          },
        );
      }
    },
    async stream(path) {
      return send('GET', path);
    },
  };
}

function parseBaseUrl(url: string): URL {
  let base: URL;
  try {
    base = new URL(url);
  } catch {
    throw new CliError(`--url: not a URL: ${url}`, EXIT.usage);
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:')
    throw new CliError(`--url: must be an http(s) URL: ${url}`, EXIT.usage);
  return base;
}

/** Turns a non-2xx answer into one line: the spec's error message when the gateway sent one. */
async function answerError(response: Response, base: URL): Promise<CliError> {
  const text = await response.text().catch(() => '');
  let message = text.slice(0, 300) || response.statusText;
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown; param?: unknown } };
    if (typeof parsed.error?.message === 'string') {
      message = parsed.error.message;
      if (typeof parsed.error.param === 'string' && !message.includes(parsed.error.param))
        message += ` (${parsed.error.param})`;
    }
  } catch {
    // not the spec's error body (a proxy's page, say): its first characters are the message
  }
  if (response.status === 401 || response.status === 403)
    return new CliError(
      `the admin key was refused by ${base.origin} (${response.status}): ${message}`,
      EXIT.refused,
      { status: response.status },
    );
  return new CliError(`the gateway refused the request (${response.status}): ${message}`, EXIT.failed, {
    status: response.status,
  });
}

function describeNetworkError(error: unknown): string {
  if (error instanceof DOMException && error.name === 'TimeoutError')
    return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return error instanceof Error ? error.message : String(error);
}
