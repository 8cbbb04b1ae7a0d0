import type { FastifyRequest } from 'fastify';
import type { Principal } from '../../accounts/accounts-service.ts';
import type { AccountRecord, ApiKeyRecord, KeyMember } from '../../core/records.ts';
import { mayDo } from '../../accounts/roles.ts';
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

/**
 * The organization member a request of an `auth: 'user'` route acts as: the session's membership, or the key's
 * member; undefined for a key with no member (the owner's, as every key made before organizations).
 */
export function memberOf(request: FastifyRequest): Pick<KeyMember, 'id' | 'role'> | undefined {
  if (request.sessionUser) return request.sessionUser.member;
  return asUser(request.principal).key.member;
}

/** The member whose keys alone a request may see and change, or undefined when it may act on every key. */
export function keyScopeOf(request: FastifyRequest): string | undefined {
  const member = memberOf(request);
  return member && !mayDo(member.role, 'keys.all') ? member.id : undefined;
}
