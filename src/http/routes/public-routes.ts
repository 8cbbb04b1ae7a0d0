import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.ts';
import { GatewayError } from '../../shared/gateway-error.ts';
import { presentModel, presentPlan } from '../present.ts';

/** Health, plans, models and metrics: no key needed. */
export function publicRoutes(app: FastifyInstance, services: Services): void {
  app.get('/health', async (_request, reply) => {
    const report = await services.health();
    return reply.status(report.status === 'down' ? 503 : 200).send(report);
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

  app.get('/metrics', async (_request, reply) => {
    const body = await services.metrics.registry.metrics();
    return reply.type(services.metrics.registry.contentType).send(body);
  });
}
