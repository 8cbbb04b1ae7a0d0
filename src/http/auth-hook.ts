import type { FastifyInstance } from 'fastify';
import type { AccountsService } from '../accounts/accounts-service.ts';
import { GatewayError } from '../shared/gateway-error.ts';
import { asUser } from './routes/principal.ts';

/** Reads `Authorization: Bearer <key>`; undefined when absent or of another scheme. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/** Authenticates every route whose config asks for a key, before its handler runs. */
export function installAuth(app: FastifyInstance, accounts: AccountsService): void {
  app.decorateRequest('principal', undefined);
  app.addHook('onRequest', async (request) => {
    const auth = request.routeOptions.config.auth ?? 'none';
    if (auth === 'none') return;
    const principal = await accounts.authenticate(bearerToken(request.headers.authorization), request.ip);
    if (auth === 'admin' && principal.kind !== 'admin')
      throw new GatewayError('forbidden', 'this route needs the admin key');
    if (auth === 'user') asUser(principal);
    request.principal = principal;
  });
}
