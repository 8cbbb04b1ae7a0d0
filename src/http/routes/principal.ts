import type { FastifyRequest } from 'fastify';
import type { Principal } from '../../accounts/accounts-service.ts';
import type { AccountRecord, ApiKeyRecord } from '../../store/records.ts';
import { GatewayError } from '../../shared/gateway-error.ts';

/** The principal as a user key and its account; 403 for the admin key or none. */
export function asUser(principal: Principal | undefined): { key: ApiKeyRecord; account: AccountRecord } {
  if (principal?.kind !== 'user') throw new GatewayError('forbidden', 'this route needs a user API key');
  return principal;
}

/** The user principal of a route declared `auth: 'user'` (the auth hook has already enforced it). */
export function userOf(request: FastifyRequest): { key: ApiKeyRecord; account: AccountRecord } {
  return asUser(request.principal);
}
