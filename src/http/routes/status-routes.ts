import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Services } from '../app-services.ts';
import { presentStatus } from '../present-operator.ts';
import { renderAtomFeed } from '../status-feed.ts';
import { linkOrigin } from '../link-origin.ts';
import { renderStatusPage, STATUS_PAGE_HEADERS } from '../status-page.ts';

/**
 * The public status page, its JSON and its Atom feed: no sign-in, served from the in-memory snapshot
 * (rebuilt at most every few seconds), so polling costs no query per visit. Mounted without a prefix
 * (`/status.json` is not under `/status`).
 */
export const statusRoutes: FastifyPluginAsync<Pick<Services, 'config' | 'operators'>> = async (
  app,
  services,
) => {
  const { status } = services.operators;
  // The feed's ids and links need an absolute address, which never comes from the request.
  const baseUrl = (request: FastifyRequest): string => linkOrigin(request.server, services.config);

  app.get('/status', async (_request, reply) =>
    reply
      .headers(STATUS_PAGE_HEADERS)
      .type('text/html; charset=utf-8')
      .send(renderStatusPage(await status.get())),
  );

  app.get('/status.json', async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=5').send(presentStatus(await status.get())),
  );

  app.get('/status/feed.atom', async (request, reply) => {
    const snapshot = await status.get();
    return reply
      .header('cache-control', 'public, max-age=5')
      .type('application/atom+xml; charset=utf-8')
      .send(renderAtomFeed(snapshot, baseUrl(request)));
  });
};
