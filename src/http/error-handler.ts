import type { ServerResponse } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { DEFAULT_RETRY_AFTER_MS, GatewayError, mustSayRetryAfter } from '../core/gateway-error.ts';
import { StoreUnavailableError } from '../store/db.ts';
import { rateLimitHeaders } from './rate-limit-headers.ts';

/** How long a client is told to wait while the database is unreachable. */
const STORE_RETRY_AFTER_MS = 2_000;

/** Maps anything thrown into the spec's error object; the only place that does. */
export function toGatewayError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  if (error instanceof StoreUnavailableError)
    return new GatewayError(
      'service_unavailable',
      'the service is temporarily unavailable (its database cannot be reached); retry after the Retry-After delay',
      { cause: error, retryAfterMs: STORE_RETRY_AFTER_MS },
    );
  const fastifyError = error as Partial<FastifyError>;
  if (fastifyError.validation) {
    const { message, param } = describeInvalid(
      fastifyError.validationContext ?? 'body',
      fastifyError.validation[0],
    );
    return new GatewayError('invalid_request', message, {
      cause: error,
      ...(param === null ? {} : { param }),
    });
  }
  if (fastifyError.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new GatewayError('invalid_request', 'request body is too large', { cause: error, status: 413 });
  }
  const status = fastifyError.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const message =
      fastifyError.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
        ? 'Content-Type must be application/json'
        : (fastifyError.message ?? 'bad request');
    return new GatewayError('invalid_request', message, { cause: error, status });
  }
  return new GatewayError('internal_error', 'internal error', { cause: error });
}

/** What Ajv reports of a failed check (with `verbose`, the failing property's own schema as `parentSchema`). */
interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
  parentSchema?: { description?: unknown };
}

/** A JSON pointer (`/models/0/id`) as a field path the way OpenAI writes `param` (`models[0].id`). */
function fieldPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path ? `${path}.${part}` : part), '');
}

/**
 * A schema failure as a sentence a person can act on, and the field at fault as `param`: the missing or
 * unknown field's own name, a pattern's description (the property's `description` in the route's schema)
 * instead of the regular expression, an enum's allowed values.
 */
export function describeInvalid(
  where: string,
  first: AjvError | undefined,
): { message: string; param: string | null } {
  if (!first) return { message: `${where} is invalid`, param: null };
  const path = fieldPath(first.instancePath);
  const field = path ? `${where}.${path}` : where;
  const { params } = first;
  const description = first.parentSchema?.description;
  switch (first.keyword) {
    case 'required': {
      const missing = String(params['missingProperty']);
      return {
        message: `${field} must have the field ${missing}`,
        param: path ? `${path}.${missing}` : missing,
      };
    }
    case 'additionalProperties': {
      const unknown = String(params['additionalProperty']);
      return {
        message: `${field} has unknown field ${unknown}`,
        param: path ? `${path}.${unknown}` : unknown,
      };
    }
    case 'enum':
      return {
        message: `${field} must be one of ${(params['allowedValues'] as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
        param: path || null,
      };
    case 'pattern':
      return {
        message:
          typeof description === 'string'
            ? `${field} must be ${description}`
            : `${field} is not in the expected form`,
        param: path || null,
      };
    case 'format':
      return { message: `${field} must be a valid ${String(params['format'])}`, param: path || null };
    default:
      return { message: `${field} ${first.message ?? 'is invalid'}`, param: path || null };
  }
}

/**
 * Whether a failed request deserves its own log line: server errors do, except 503s, whose cause (an
 * unreachable database or Redis, a shutdown) is logged once when it starts and once when it ends.
 */
export function isLogged(error: GatewayError): boolean {
  return error.status >= 500 && error.code !== 'service_unavailable';
}

/**
 * The headers of an error response, in one new map: the x-ratelimit-* state of a refusal that carries the key's
 * limits, with Retry-After and Retry-After-Ms where it has a delay.
 */
export function errorHeaders(error: GatewayError): Record<string, string> {
  const headers = error.rateLimits === undefined ? {} : rateLimitHeaders(error.rateLimits);
  const delay = error.retryAfterMs ?? (mustSayRetryAfter(error.status) ? DEFAULT_RETRY_AFTER_MS : undefined);
  if (delay !== undefined) Object.assign(headers, retryHeaders(delay));
  return headers;
}

/** Retry-After (whole seconds, at least 1) and retry-after-ms for a delay. */
export function retryHeaders(delayMs: number): Record<string, string> {
  return {
    'retry-after': String(Math.max(1, Math.ceil(delayMs / 1000))),
    'retry-after-ms': String(Math.max(0, Math.ceil(delayMs))),
  };
}

/**
 * The answer to a request that arrives while the server drains (on a connection that was busy when the stop
 * began): the spec's 503 with the retry headers, and the connection closed after it.
 */
export function answerDraining(res: ServerResponse, requestId: string): void {
  const error = new GatewayError(
    'service_unavailable',
    'the server is shutting down; retry on another instance',
  );
  const body = JSON.stringify(error.toBody());
  res.writeHead(503, {
    ...errorHeaders(error),
    'x-request-id': requestId,
    connection: 'close',
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** Writes a GatewayError as the spec's error response, with Retry-After where it applies. */
export function sendError(reply: FastifyReply, error: GatewayError): FastifyReply {
  return reply
    .status(error.status)
    .headers(errorHeaders(error))
    .type('application/json')
    .send(error.toBody());
}

/** Installs the error handler and the not-found handler that also answers 405 for a known path. */
export function installErrorHandling(app: FastifyInstance, routes: RouteTable): void {
  // Whatever sent a 429 or 503 (a handler's own status, a health check that is down), it says when to retry.
  app.addHook('onSend', async (_request, reply, payload) => {
    if (mustSayRetryAfter(reply.statusCode) && !reply.hasHeader('retry-after'))
      reply.headers(retryHeaders(DEFAULT_RETRY_AFTER_MS));
    return payload;
  });
  app.setErrorHandler((error, request, reply) => {
    const gatewayError = toGatewayError(error);
    if (isLogged(gatewayError)) request.log.error({ err: error }, 'request failed');
    return sendError(reply, gatewayError);
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const methods = routes.methodsFor(path);
    if (methods.length > 0) {
      reply.header('allow', methods.join(', '));
      return sendError(
        reply,
        new GatewayError('method_not_allowed', `${request.method} is not allowed on ${path}`),
      );
    }
    return sendError(reply, new GatewayError('not_found', `no route ${request.method} ${path}`));
  });
}

/** The registered routes' path patterns, to tell a wrong method (405) from an unknown path (404). */
export class RouteTable {
  readonly #routes: { pattern: RegExp; method: string }[] = [];

  add(url: string, method: string | string[]): void {
    const pattern = new RegExp(`^${url.replace(/:[^/]+/g, '[^/]+').replace(/\*/g, '.*')}/?$`);
    for (const m of Array.isArray(method) ? method : [method]) this.#routes.push({ pattern, method: m });
  }

  methodsFor(path: string): string[] {
    return [
      ...new Set(this.#routes.filter((route) => route.pattern.test(path)).map((route) => route.method)),
    ];
  }
}
