import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.ts';
import { createSseSink } from '../sse-sink.ts';
import { userOf } from './principal.ts';

/** POST /v1/chat/completions: the OpenAI-convention endpoint, JSON or SSE. */
export function chatRoutes(app: FastifyInstance, services: Services): void {
  app.post('/v1/chat/completions', { config: { auth: 'user' } }, async (request, reply) => {
    const { key, account } = userOf(request);
    const ctx = { requestId: request.id, key, account, arrivedAt: request.arrivedAt };
    const admitted = await services.gateway.admit(ctx, request.body);
    if (admitted.request.stream) {
      const sink = createSseSink(reply);
      await services.gateway.stream(admitted, sink);
      return reply;
    }
    const abort = new AbortController();
    reply.raw.on('close', () => {
      if (!reply.raw.writableFinished) abort.abort();
    });
    const { completion, headers } = await services.gateway.complete(admitted, abort.signal);
    return reply.headers(headers).send(completion);
  });

  app.get('/metrics', async (_request, reply) => {
    const body = await services.metrics.registry.metrics();
    return reply.type(services.metrics.registry.contentType).send(body);
  });
}
