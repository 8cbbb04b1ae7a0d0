import type { FastifyInstance } from 'fastify';
import { isCidr } from '../../accounts/accounts-service.ts';
import type { Services } from '../../services.ts';
import { GatewayError } from '../../shared/gateway-error.ts';
import { presentKey } from '../present.ts';
import { userOf } from './principal.ts';

const createSchema = {
  body: {
    type: 'object',
    additionalProperties: false,
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 100 },
      allowed_ips: { type: ['array', 'null'], maxItems: 100, items: { type: 'string', maxLength: 64 } },
    },
  },
} as const;

const idParams = {
  params: { type: 'object', properties: { id: { type: 'string', maxLength: 100 } } },
} as const;

/** The account's API keys: list (never the secret), create and rotate (secret once), revoke. */
export function keyRoutes(app: FastifyInstance, services: Services): void {
  const config = { auth: 'user' } as const;

  app.get('/api/keys', { config }, async (request) => {
    const keys = await services.accounts.listKeys(userOf(request).account.id);
    return { object: 'list', data: keys.map(presentKey) };
  });

  app.post<{ Body: { name?: string; allowed_ips?: string[] | null } | undefined }>(
    '/api/keys',
    { config, schema: createSchema },
    async (request, reply) => {
      const allowedIps = request.body?.allowed_ips ?? null;
      const bad = allowedIps?.find((cidr) => !isCidr(cidr));
      if (bad !== undefined)
        throw new GatewayError(
          'invalid_request',
          `body.allowed_ips: ${bad} is not an IP address or CIDR block`,
        );
      const issued = await services.accounts.createKey(
        userOf(request).account.id,
        request.body?.name ?? 'unnamed',
        allowedIps && allowedIps.length > 0 ? allowedIps : null,
      );
      return reply.status(201).send(issued);
    },
  );

  app.delete<{ Params: { id: string } }>('/api/keys/:id', { config, schema: idParams }, async (request) => {
    const key = await services.accounts.revokeKey(userOf(request).account.id, request.params.id);
    return presentKey(key);
  });

  app.post<{ Params: { id: string } }>(
    '/api/keys/:id/rotate',
    { config, schema: idParams },
    async (request) => {
      return services.accounts.rotateKey(userOf(request).account.id, request.params.id);
    },
  );
}
