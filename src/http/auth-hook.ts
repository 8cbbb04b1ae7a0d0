import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AccountsService } from '../accounts/accounts-service.ts';
import type { SessionsService } from '../accounts/sessions-service.ts';
import type { Config } from '../core/config.ts';
import { GatewayError } from '../core/gateway-error.ts';
import { asUser } from './routes/principal.ts';
import { isRestrictedKey, managementRefusal } from '../accounts/key-scope.ts';
import { CSRF_HEADER, SAFE_METHODS, sessionCookie } from './session-cookie.ts';

/** Reads `Authorization: Bearer <key>`; undefined when absent or of another scheme. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/**
 * Whether a route manages the account rather than reads it: every change, every operator route, and reads
 * marked `manages` (the webhook signing secret). Restricted keys may not (accounts/key-scope.ts).
 */
function manages(request: FastifyRequest): boolean {
  const { auth, manages: marked } = request.routeOptions.config;
  return auth === 'admin' || marked === true || !SAFE_METHODS.has(request.method);
}

/**
 * Authenticates every route whose config asks for it, before its handler runs: by a key in `Authorization`
 * or, with no such header, by the dashboard's session cookie. A cookie request that changes anything must
 * carry its session's CSRF token in `X-CSRF-Token` (403 without it). Routes declared `auth: 'admin'` admit
 * the admin key and an operator account's key or session; everyone else gets 403. A key with restrictions
 * gets 403 on every route that manages the account.
 */
export function installAuth(
  app: FastifyInstance,
  accounts: AccountsService,
  sessions?: { service: SessionsService; config: Config },
): void {
  app.decorateRequest('principal', undefined);
  app.decorateRequest('sessionUser', undefined);
  app.addHook('onRequest', async (request) => {
    const auth = request.routeOptions.config.auth ?? 'none';
    if (auth === 'none') return;
    const bearer = bearerToken(request.headers.authorization);
    const cookie =
      sessions && (auth === 'session' || bearer === undefined)
        ? sessionCookie(request, sessions.config)
        : undefined;
    if (sessions && cookie !== undefined) {
      const found = await sessions.service.authenticate(cookie);
      if (!found) throw new GatewayError('unauthorized', 'the session has ended; sign in again');
      if (auth === 'admin' && found.account.role !== 'operator')
        throw new GatewayError('forbidden', 'this route is for operators');
      if (found.account.status === 'suspended')
        throw new GatewayError('forbidden', 'this account is suspended');
      const token = request.headers[CSRF_HEADER];
      if (
        !SAFE_METHODS.has(request.method) &&
        !sessions.service.csrfMatches(found.session, typeof token === 'string' ? token : undefined)
      )
        throw new GatewayError(
          'forbidden',
          `a signed-in request that changes something needs the ${CSRF_HEADER} header`,
        );
      request.sessionUser = found;
      return;
    }
    if (auth === 'session') throw new GatewayError('unauthorized', 'not signed in');
    const principal = await accounts.authenticate(bearer, request.ip);
    // Operators: the admin key, or the key of an account an operator made an operator.
    if (auth === 'admin' && principal.kind === 'user' && principal.account.role !== 'operator')
      throw new GatewayError('forbidden', 'this route is for operators');
    if (auth === 'user') asUser(principal);
    if (principal.kind === 'user' && isRestrictedKey(principal.key) && manages(request))
      throw managementRefusal();
    request.principal = principal;
  });
}
