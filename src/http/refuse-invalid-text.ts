import type { FastifyInstance } from 'fastify';
import { GatewayError } from '../core/gateway-error.ts';

/**
 * Whether a string is text every store keeps as given: PostgreSQL refuses a NUL in text (the query fails), and
 * an unpaired surrogate has no UTF-8 form, so both drivers would store a replacement character instead.
 */
export const isStorableText = (text: string): boolean => !text.includes('\0') && text.isWellFormed();

/**
 * Where in a parsed value (a body, the path's parameters, the query) the first string that is not storable
 * text sits, as a field path the way `param` names one (`allowed_models[2]`; '' for the value itself), or
 * undefined when every string is storable. Object keys count as strings. The body's value cap bounds the walk.
 */
export function invalidTextAt(value: unknown, path = ''): string | undefined {
  if (typeof value === 'string') return isStorableText(value) ? undefined : path;
  if (typeof value !== 'object' || value === null) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = invalidTextAt(value[i], `${path}[${i}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const [key, item] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key;
    if (!isStorableText(key)) return at;
    const found = invalidTextAt(item, at);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Refuses, before any route's own checks, a request whose path parameters, query or body hold a string that
 * is not storable text: an identifier with a NUL names nothing that exists (404), a field with one is a bad
 * request (400 naming the field). Installed on the root, so every route has it.
 */
export function installTextCheck(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    if (invalidTextAt(request.params) !== undefined)
      throw new GatewayError(
        'not_found',
        `nothing is found at ${request.method} ${request.routeOptions.url}`,
      );
    const inQuery = invalidTextAt(request.query);
    if (inQuery !== undefined)
      throw new GatewayError(
        'invalid_request',
        `query.${inQuery} must not hold a NUL or an unpaired surrogate`,
        {
          param: inQuery,
        },
      );
    const inBody = invalidTextAt(request.body);
    if (inBody !== undefined)
      throw new GatewayError(
        'invalid_request',
        inBody ? `body.${inBody} must not hold a NUL or an unpaired surrogate` : 'body must not hold a NUL',
        inBody ? { param: inBody } : {},
      );
  });
}
