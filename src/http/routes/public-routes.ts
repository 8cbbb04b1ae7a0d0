import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Services } from '../../services.ts';
import { GatewayError } from '../../shared/gateway-error.ts';
import { bearerToken } from '../auth-hook.ts';
import { presentModel, presentPlan } from '../present.ts';

/**
 * Health, plans and models: no key needed (health's details need the admin key); metrics need a token.
 * Mounted without a prefix: its paths are the spec's own.
 */
export const publicRoutes: FastifyPluginAsync<
  Pick<Services, 'accounts' | 'config' | 'health' | 'metrics' | 'startedAt'>
> = async (app, services) => {
  const isAdmin = async (request: FastifyRequest): Promise<boolean> => {
    const secret = bearerToken(request.headers.authorization);
    if (!secret) return false;
    const principal = await services.accounts.authenticate(secret, request.ip).catch(() => undefined);
    return principal?.kind === 'admin';
  };

  // Load balancers need only the status; deployments, upstream models and error rates are the operator's.
  app.get('/health', async (request, reply) => {
    const report = await services.health();
    const status = report.status === 'down' ? 503 : 200;
    return reply.status(status).send((await isAdmin(request)) ? report : { status: report.status });
  });

  app.get('/plans', async () => ({
    object: 'list',
    data: [...services.config.plans.values()].map(presentPlan),
  }));

  const created = Math.floor(services.startedAt / 1000);
  const models = {
    object: 'list',
    data: [...services.config.models.values()].map((model) => presentModel(model, created)),
  };
  app.get('/v1/models', async () => models);
  const byId = new Map([...services.config.models.keys()].map((id, index) => [id, models.data[index]!]));
  app.get<{ Params: { id: string } }>('/v1/models/:id', async (request) => {
    const model = byId.get(request.params.id);
    if (model) return model;
    throw new GatewayError(
      'model_not_found',
      `the model ${JSON.stringify(request.params.id.slice(0, 100))} does not exist; GET /v1/models lists them`,
      { param: 'model' },
    );
  });

  const metricsToken = services.config.security.metricsToken;
  const tokenHash = metricsToken === undefined ? undefined : sha256(metricsToken);
  app.get('/metrics', async (request, reply) => {
    const presented = bearerToken(request.headers.authorization);
    const byToken =
      tokenHash !== undefined && presented !== undefined && timingSafeEqual(sha256(presented), tokenHash);
    if (!byToken && !(await isAdmin(request)))
      throw new GatewayError(
        'unauthorized',
        'metrics need the bearer token TOLLGATE_METRICS_TOKEN sets, or the admin key (see docs/security.md)',
      );
    const body = await services.metrics.registry.metrics();
    return reply.type(services.metrics.registry.contentType).send(body);
  });
};

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();
