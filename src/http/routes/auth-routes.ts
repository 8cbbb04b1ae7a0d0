import type { FastifyPluginAsync } from 'fastify';
import type { Services } from '../app-services.ts';
import { presentAccount } from '../present.ts';

const registerSchema = {
  body: {
    type: 'object',
    required: ['email', 'password'],
    additionalProperties: false,
    properties: {
      email: { type: 'string', format: 'email', maxLength: 254 },
      password: { type: 'string', minLength: 8, maxLength: 1024 },
    },
  },
} as const;

const verifySchema = {
  body: {
    type: 'object',
    required: ['token'],
    additionalProperties: false,
    properties: { token: { type: 'string', minLength: 1, maxLength: 512 } },
  },
} as const;

/** `/api/auth`: registration and e-mail verification, open to anyone (throttled per address). */
export const authRoutes: FastifyPluginAsync<Pick<Services, 'accounts' | 'signups'>> = async (
  app,
  services,
) => {
  app.post<{ Body: { email: string; password: string } }>(
    '/register',
    { schema: registerSchema },
    async (request, reply) => {
      await services.signups.check(request.ip);
      const { account, apiKey } = await services.accounts.register(request.body.email, request.body.password);
      return reply.status(201).send({ account: presentAccount(account), api_key: apiKey });
    },
  );

  app.post<{ Body: { token: string } }>('/verify-email', { schema: verifySchema }, async (request) => {
    await services.signups.check(request.ip);
    const account = await services.accounts.verifyEmail(request.body.token);
    return { account: presentAccount(account), verified: true };
  });
};
