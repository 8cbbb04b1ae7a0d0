import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.ts';
import { iso, presentDelivery } from '../present.ts';
import { userOf } from './principal.ts';

/** The account's webhook endpoint, its signing secret, test events and the delivery log. */
export function webhookRoutes(app: FastifyInstance, services: Pick<Services, 'webhooks'>): void {
  const config = { auth: 'user' } as const;
  const { webhooks } = services;

  app.put<{ Body: { url: string } }>(
    '/api/webhooks/endpoint',
    {
      config,
      schema: {
        body: {
          type: 'object',
          required: ['url'],
          additionalProperties: false,
          properties: { url: { type: 'string', maxLength: 2048 } },
        },
      },
    },
    async (request) => webhooks.setEndpoint(userOf(request).account.id, request.body.url),
  );

  app.get('/api/webhooks/endpoint', { config }, async (request) => {
    const endpoint = await webhooks.endpoint(userOf(request).account.id);
    return { url: endpoint.url, secret: endpoint.secret, created_at: iso(endpoint.createdAt) };
  });

  app.delete('/api/webhooks/endpoint', { config }, async (request) => {
    await webhooks.deleteEndpoint(userOf(request).account.id);
    return { deleted: true };
  });

  app.post('/api/webhooks/endpoint/rotate-secret', { config }, async (request) =>
    webhooks.rotateSecret(userOf(request).account.id),
  );

  app.post('/api/webhooks/test', { config }, async (request, reply) => {
    const id = await webhooks.sendTest(userOf(request).account.id);
    return reply.status(202).send({ event_id: id, status: 'queued' });
  });

  app.get('/api/webhooks/deliveries', { config }, async (request) => {
    const deliveries = await webhooks.deliveries(userOf(request).account.id);
    return {
      object: 'list',
      data: deliveries.map(presentDelivery),
    };
  });

  app.post<{ Params: { id: string } }>(
    '/api/webhooks/deliveries/:id/redeliver',
    {
      config,
      schema: { params: { type: 'object', properties: { id: { type: 'string', maxLength: 100 } } } },
    },
    async (request, reply) => {
      const eventId = await webhooks.redeliver(userOf(request).account.id, request.params.id);
      return reply.status(202).send({ event_id: eventId, status: 'queued' });
    },
  );
}
