import type { FastifyPluginAsync } from 'fastify';
import type { Services } from '../app-services.ts';
import { iso, presentDelivery } from '../present.ts';
import { userOf } from './principal.ts';

/** `/api/webhooks`: the account's webhook endpoint, its signing secret, test events, the event and delivery logs. */
export const webhookRoutes: FastifyPluginAsync<Pick<Services, 'webhooks'>> = async (app, services) => {
  const config = { auth: 'user' } as const;
  const { webhooks } = services;

  app.put<{ Body: { url: string } }>(
    '/endpoint',
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

  // Shows the signing secret, with which anyone could forge events to the account's receiver.
  app.get('/endpoint', { config: { ...config, manages: true } }, async (request) => {
    const endpoint = await webhooks.endpoint(userOf(request).account.id);
    return { url: endpoint.url, secret: endpoint.secret, created_at: iso(endpoint.createdAt) };
  });

  app.delete('/endpoint', { config }, async (request) => {
    await webhooks.deleteEndpoint(userOf(request).account.id);
    return { deleted: true };
  });

  app.post('/endpoint/rotate-secret', { config }, async (request) =>
    webhooks.rotateSecret(userOf(request).account.id),
  );

  app.post('/test', { config }, async (request, reply) => {
    const id = await webhooks.sendTest(userOf(request).account.id);
    return reply.status(202).send({ event_id: id, status: 'queued' });
  });

  app.get('/events', { config }, async (request) => {
    const events = await webhooks.events(userOf(request).account.id);
    return {
      object: 'list',
      data: events.map((event) => ({
        id: event.id,
        event_type: event.eventType,
        status: event.status,
        attempts: event.attempts,
        last_status_code: event.lastStatusCode,
        next_attempt_at: event.status === 'pending' ? iso(event.nextAttemptAt) : null,
        created_at: iso(event.createdAt),
        finished_at: iso(event.finishedAt),
      })),
    };
  });

  app.get('/deliveries', { config }, async (request) => {
    const deliveries = await webhooks.deliveries(userOf(request).account.id);
    return {
      object: 'list',
      data: deliveries.map(presentDelivery),
    };
  });

  app.post<{ Params: { id: string } }>(
    '/deliveries/:id/redeliver',
    {
      config,
      schema: { params: { type: 'object', properties: { id: { type: 'string', maxLength: 100 } } } },
    },
    async (request, reply) => {
      const eventId = await webhooks.redeliver(userOf(request).account.id, request.params.id);
      return reply.status(202).send({ event_id: eventId, status: 'queued' });
    },
  );
};
