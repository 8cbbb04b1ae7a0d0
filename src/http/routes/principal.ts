import type { FastifyRequest } from 'fastify';
import type { Principal } from '../../accounts/accounts-service.ts';
import type { AccountRecord, ApiKeyRecord } from '../../core/records.ts';
import { GatewayError } from '../../core/gateway-error.ts';
import type { SessionUser } from '../session-cookie.ts';

/** The principal as a user key and its account; 403 for the admin key or none. */
export function asUser(principal: Principal | undefined): { key: ApiKeyRecord; account: AccountRecord } {
  if (principal?.kind !== 'user') throw new GatewayError('forbidden', 'this route needs a user API key');
  return principal;
}

/**
 * The account of a route declared `auth: 'user'` (the auth hook has already enforced it): the key's, or the
 * signed-in dashboard's (then there is no key).
 */
export function userOf(request: FastifyRequest): { key: ApiKeyRecord | undefined; account: AccountRecord } {
  if (request.sessionUser) return { key: undefined, account: request.sessionUser.account };
  return asUser(request.principal);
}

/** The dashboard session of a route declared `auth: 'session'`. */
export function sessionOf(request: FastifyRequest): SessionUser {
  if (!request.sessionUser) throw new GatewayError('unauthorized', 'not signed in');
  return request.sessionUser;
}
