import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError } from '../core/gateway-error.ts';
import { countJsonValues } from './count-json-values.ts';

/** What a route's body may hold: bytes, and JSON values (each object, array and item; see countJsonValues). */
export interface BodyLimit {
  bytes: number;
  values: number;
}

const KiB = 1024;

/**
 * Limits fitted to what each route needs, with room for a client that writes every character as a `\u`
 * escape (six bytes). The value cap is what bounds parse time: a body of the largest size and at most this
 * many values parses in well under a millisecond, however it nests. Exact paths first, then prefixes.
 */
const EXACT: ReadonlyMap<string, BodyLimit> = new Map([
  // An e-mail address (254) and a password (1,024): 7.7 KB at worst.
  ['/api/auth/login', { bytes: 8 * KiB, values: 16 }],
  ['/api/auth/register', { bytes: 8 * KiB, values: 16 }],
  ['/api/auth/password-reset', { bytes: 8 * KiB, values: 16 }],
  // A token (512): 3 KB at worst.
  ['/api/auth/verify-email', { bytes: 8 * KiB, values: 16 }],
]);
const PREFIXES: readonly (readonly [prefix: string, limit: BodyLimit])[] = [
  // Stripe's event as Stripe sends it: signed bytes, read as text and never parsed before the signature holds.
  ['/api/payments/stripe/', { bytes: 1024 * KiB, values: 0 }],
  // Two passwords, or a token and a password: 12.3 KB at worst.
  ['/api/auth/', { bytes: 16 * KiB, values: 16 }],
  // The test provider's card form: an outcome and a reason.
  ['/checkout/', { bytes: 1 * KiB, values: 16 }],
  // The largest: a key with 100 allowed models (200 characters each) and 100 IP blocks, 158 KB at worst;
  // an announcement (10,000 characters and 100 models) is 122 KB. At most about 210 values.
  ['/api/', { bytes: 256 * KiB, values: 1_024 }],
];
/** Every other route takes no body worth the name (health, plans, the web app's pages, unknown paths). */
export const OTHER: BodyLimit = { bytes: 1 * KiB, values: 16 };

/** The limit of the route at `url` (its pattern, as registered). */
export function bodyLimitOf(url: string): BodyLimit {
  const exact = EXACT.get(url);
  if (exact) return exact;
  for (const [prefix, limit] of PREFIXES) if (url.startsWith(prefix)) return limit;
  return OTHER;
}

/**
 * Gives every Fastify route its body limit (never more than TOLLGATE_BODY_LIMIT, which is the chat endpoint's)
 * and parses JSON bodies under the route's value cap. Installed on the root before any route plugin.
 */
export function installBodyLimits(app: FastifyInstance, maxBytes: number): void {
  app.addHook('onRoute', (route) => {
    route.bodyLimit ??= Math.min(bodyLimitOf(route.url ?? '').bytes, maxBytes);
  });
  // A body declared too large is refused before a byte of it is read. The answer keeps the connection (Node
  // reads the rest off and drops it), so the client reliably gets its 413, not a reset.
  app.addHook('onRequest', async (request) => {
    const declared = Number(request.headers['content-length']);
    if (declared > request.routeOptions.bodyLimit) throw tooLarge();
  });
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    try {
      done(null, parseJsonBody(request, body as Buffer));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}

const tooLarge = (): GatewayError =>
  new GatewayError('invalid_request', 'request body is too large', { status: 413 });

function parseJsonBody(request: FastifyRequest, body: Buffer): unknown {
  if (body.length === 0) throw new GatewayError('invalid_request', 'request body is empty');
  const { values } = bodyLimitOf(request.routeOptions.url ?? '');
  if (countJsonValues([body], values) > values)
    throw new GatewayError(
      'invalid_request',
      `the request body holds more than ${values} JSON values (objects, arrays and items), the limit`,
    );
  try {
    return JSON.parse(body.toString());
  } catch (error) {
    throw new GatewayError('invalid_request', `request body is not valid JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
}
