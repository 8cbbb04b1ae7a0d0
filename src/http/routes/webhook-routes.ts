import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.ts';
import { GatewayError } from '../../shared/gateway-error.ts';
import { newId } from '../../shared/ids.ts';
import { checkWebhookUrl } from '../../webhooks/url-guard.ts';
import { iso, presentDelivery } from '../present.ts';
import { userOf } from './principal.ts';

const newSecret = (): string => `whsec_${randomBytes(24).toString('base64url')}`;

/** The account's webhook endpoint, its signing secret, test events and the delivery log. */
export function webhookRoutes(app: FastifyInstance, services: Services): void {
  const config = { auth: 'user' } as const;
  const { store, clock } = services;

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
    async (request) => {
      const accountId = userOf(request).account.id;
      const url = await checkWebhookUrl(
        request.body.url,
        services.config.webhookAllowPrivate,
        services.config.security.webhookPorts,
      );
      const existing = await store.webhooks.endpoint(accountId);
      const secret = existing?.secret ?? newSecret();
      await store.webhooks.putEndpoint({
        accountId,
        url: url.toString(),
        secret,
        createdAt: existing?.createdAt ?? clock(),
      });
      return { url: url.toString(), secret };
    },
  );

  app.get('/api/webhooks/endpoint', { config }, async (request) => {
    const endpoint = await store.webhooks.endpoint(userOf(request).account.id);
    if (!endpoint) throw new GatewayError('not_found', 'no webhook endpoint is set');
    return { url: endpoint.url, secret: endpoint.secret, created_at: iso(endpoint.createdAt) };
  });

  app.delete('/api/webhooks/endpoint', { config }, async (request) => {
    if (!(await store.webhooks.deleteEndpoint(userOf(request).account.id)))
      throw new GatewayError('not_found', 'no webhook endpoint is set');
    return { deleted: true };
  });

  app.post('/api/webhooks/endpoint/rotate-secret', { config }, async (request) => {
    const endpoint = await store.webhooks.endpoint(userOf(request).account.id);
    if (!endpoint) throw new GatewayError('not_found', 'no webhook endpoint is set');
    const secret = newSecret();
    await store.webhooks.putEndpoint({ ...endpoint, secret });
    return { url: endpoint.url, secret };
  });

  app.post('/api/webhooks/test', { config }, async (request, reply) => {
    const accountId = userOf(request).account.id;
    if (!(await store.webhooks.endpoint(accountId)))
      throw new GatewayError('invalid_request', 'set a webhook endpoint first');
    const now = clock();
    const id = newId('evt');
    const payload = JSON.stringify({
      event_type: 'webhook.test',
      event_id: id,
      timestamp: new Date(now).toISOString(),
    });
    await store.webhooks.enqueue({
      id,
      accountId,
      eventType: 'webhook.test',
      payload,
      status: 'pending',
      attempts: 0,
      nextAttemptAt: now,
      createdAt: now,
      finishedAt: null,
    });
    services.dispatcher.nudge();
    return reply.status(202).send({ event_id: id, status: 'queued' });
  });

  app.get('/api/webhooks/deliveries', { config }, async (request) => {
    const deliveries = await store.webhooks.deliveriesOf(userOf(request).account.id, 100);
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
      const delivery = await store.webhooks.delivery(userOf(request).account.id, request.params.id);
      if (!delivery) throw new GatewayError('not_found', `no delivery ${request.params.id}`);
      await store.webhooks.requeue(delivery.eventId, clock());
      services.dispatcher.nudge();
      return reply.status(202).send({ event_id: delivery.eventId, status: 'queued' });
    },
  );
}
