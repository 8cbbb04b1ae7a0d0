import type { FastifyRequest } from 'fastify';
import type { AccountRecord, ApiKeyRecord } from '../../store/records.ts';
import { GatewayError } from '../../shared/gateway-error.ts';

/** The user principal of a route declared `auth: 'user'` (the auth hook has already enforced it). */
export function userOf(request: FastifyRequest): { key: ApiKeyRecord; account: AccountRecord } {
  const principal = request.principal;
  if (principal?.kind !== 'user') throw new GatewayError('forbidden', 'this route needs a user API key');
  return principal;
}
