import type { FastifyPluginAsync } from 'fastify';
import type { AccountsService } from '../../accounts/accounts-service.ts';
import type { EmbeddingsGateway } from '../../embeddings/embeddings-gateway.ts';
import { answerHeaders } from '../answer-headers.ts';
import { bearerToken } from '../auth-hook.ts';
import { embeddingsAnswerSchema } from '../schemas/api.ts';
import { asUser } from './principal.ts';

/**
 * POST /v1/embeddings, OpenAI's convention. Any user key may call it, restricted ones too (it is a model call,
 * not account management), so it authenticates here rather than through the route-level auth hook.
 */
export const embeddingsRoutes: FastifyPluginAsync<{
  accounts: AccountsService;
  embeddings: EmbeddingsGateway;
}> = async (app, { accounts, embeddings }) => {
  app.post(
    '/v1/embeddings',
    { schema: { response: { 200: embeddingsAnswerSchema } } },
    async (request, reply) => {
      const arrivedAt = performance.now();
      const { key, account } = asUser(
        await accounts.authenticate(bearerToken(request.headers.authorization), request.ip),
      );
      const abort = new AbortController();
      reply.raw.on('close', () => {
        if (!reply.raw.writableFinished) abort.abort();
      });
      const answer = await embeddings.embed(
        { requestId: request.id, key, account, arrivedAt },
        request.body,
        abort.signal,
      );
      void reply.headers(answerHeaders(answer));
      return answer.body;
    },
  );
};
