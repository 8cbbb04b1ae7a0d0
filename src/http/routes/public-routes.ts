import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Principal } from '../../accounts/accounts-service.ts';
import type { Services } from '../app-services.ts';
import { StoreUnavailableError } from '../../store/db.ts';
import { GatewayError } from '../../core/gateway-error.ts';
import { bearerToken } from '../auth-hook.ts';
import { presentModel, presentPlan } from '../present.ts';

/**
 * Health, plans and models: no key needed (health's details need the admin key); metrics need a token.
 * Mounted without a prefix: its paths are the spec's own.
 */
export const publicRoutes: FastifyPluginAsync<
  Pick<Services, 'accounts' | 'config' | 'health' | 'metrics' | 'readiness' | 'startedAt'>
> = async (app, services) => {
  /** Who the key in Authorization is: undefined without one; a key that is not valid throws its 401 or 403. */
  const principalOf = async (request: FastifyRequest): Promise<Principal | undefined> => {
    const secret = bearerToken(request.headers.authorization);
    return secret === undefined ? undefined : services.accounts.authenticate(secret, request.ip);
  };

  // Load balancers need only the status; deployments, upstream models and error rates are the operator's. A
  // key that is given must be valid, as everywhere else; while the database cannot be reached only the admin
  // key can be told apart, and anything else gets the status (503, down) rather than an error.
  app.get('/health', async (request, reply) => {
    const principal = await principalOf(request).catch((error: unknown) => {
      if (error instanceof StoreUnavailableError) return undefined;
      throw error;
    });
    const report = await services.health();
    const status = report.status === 'down' ? 503 : 200;
    return reply.status(status).send(principal?.kind === 'admin' ? report : { status: report.status });
  });

  // Readiness, apart from liveness (`/health`): 503 naming the unmet conditions until this instance serves at
  // full speed. No key, no I/O: a probe every second costs nothing.
  app.get('/health/ready', async () => {
    const unmet = services.readiness.unmet();
    if (unmet.length === 0) return { status: 'ready' };
    throw new GatewayError(
      'service_unavailable',
      `this instance is not ready yet (waiting for: ${unmet.join(', ')}); retry after the Retry-After delay or use another instance`,
      { retryAfterMs: NOT_READY_RETRY_MS },
    );
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
    if (!byToken && (await principalOf(request).catch(() => undefined))?.kind !== 'admin')
      throw new GatewayError(
        'unauthorized',
        'metrics need the bearer token TOLLGATE_METRICS_TOKEN sets, or the admin key (see docs/security.md)',
      );
    const body = await services.metrics.registry.metrics();
    return reply.type(services.metrics.registry.contentType).send(body);
  });
};

/** What a client is told to wait while an instance is not ready (start-up takes about a second). */
const NOT_READY_RETRY_MS = 1_000;

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();
