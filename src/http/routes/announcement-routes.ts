import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { AnnouncementInput } from '../../operators/announcements-service.ts';
import type { Services } from '../app-services.ts';
import { GatewayError } from '../../core/gateway-error.ts';
import { actorOf, noteAudit } from '../operator-audit.ts';
import { presentAnnouncement } from '../present-operator.ts';
import { linkOrigin } from '../link-origin.ts';

const config = { auth: 'admin' } as const;
const idParams = { type: 'object', properties: { id: { type: 'string', maxLength: 100 } } } as const;
const dateTime = { type: 'string', maxLength: 40 } as const;

const fields = {
  title: { type: 'string', minLength: 1, maxLength: 200 },
  body: { type: 'string', minLength: 1, maxLength: 10_000 },
  severity: { type: 'string', enum: ['info', 'minor', 'major', 'critical'] },
  models: { type: 'array', maxItems: 100, items: { type: 'string', maxLength: 100 } },
  starts_at: dateTime,
  ends_at: { type: ['string', 'null'], maxLength: 40 },
  breaking: { type: 'boolean' },
  effective_at: { type: ['string', 'null'], maxLength: 40 },
} as const;

interface AnnouncementBody {
  title?: string;
  body?: string;
  severity?: AnnouncementInput['severity'];
  models?: string[];
  starts_at?: string;
  ends_at?: string | null;
  breaking?: boolean;
  effective_at?: string | null;
}

/** An ISO date-time field as ms; null stays null, absent stays undefined, anything else is a 400. */
function instant(value: string | null | undefined, param: string): number | null | undefined {
  if (value === undefined || value === null) return value;
  const ms = Date.parse(value);
  if (!Number.isFinite(ms))
    throw new GatewayError('invalid_request', `body.${param} must be an ISO 8601 date-time`, { param });
  return ms;
}

function inputOf(body: AnnouncementBody): AnnouncementInput {
  const startsAt = instant(body.starts_at, 'starts_at');
  const endsAt = instant(body.ends_at, 'ends_at');
  const effectiveAt = instant(body.effective_at, 'effective_at');
  return {
    ...(body.title !== undefined ? { title: body.title } : {}),
    ...(body.body !== undefined ? { body: body.body } : {}),
    ...(body.severity !== undefined ? { severity: body.severity } : {}),
    ...(body.models !== undefined ? { models: [...new Set(body.models)] } : {}),
    ...(typeof startsAt === 'number' ? { startsAt } : {}),
    ...(endsAt !== undefined ? { endsAt } : {}),
    ...(body.breaking !== undefined ? { breaking: body.breaking } : {}),
    ...(effectiveAt !== undefined ? { effectiveAt } : {}),
  };
}

/** The site's address for links in mail (never the request's Host). */
const baseUrlOf = (request: FastifyRequest, services: Pick<Services, 'config'>): string =>
  linkOrigin(request.server, services.config);

/** `/api/admin/announcements`: operators post, edit and end them; `/status` and its feed show them. */
export const announcementRoutes: FastifyPluginAsync<Pick<Services, 'config' | 'operators'>> = async (
  app,
  services,
) => {
  const { announcements } = services.operators;

  app.get('', { config }, async () => ({
    object: 'list',
    data: (await announcements.list()).map(presentAnnouncement),
  }));

  app.post<{ Body: AnnouncementBody }>(
    '',
    {
      config,
      schema: {
        body: {
          type: 'object',
          required: ['title', 'body'],
          additionalProperties: false,
          properties: fields,
        },
      },
    },
    async (request, reply) => {
      const created = await announcements.create(
        inputOf(request.body),
        actorOf(request).actor,
        baseUrlOf(request, services),
      );
      noteAudit(request, { details: { id: created.id } });
      return reply.status(201).send(presentAnnouncement(created));
    },
  );

  app.patch<{ Params: { id: string }; Body: AnnouncementBody }>(
    '/:id',
    {
      config,
      schema: { params: idParams, body: { type: 'object', additionalProperties: false, properties: fields } },
    },
    async (request) =>
      presentAnnouncement(
        await announcements.update(request.params.id, inputOf(request.body), baseUrlOf(request, services)),
      ),
  );

  app.post<{ Params: { id: string } }>(
    '/:id/end',
    { config, schema: { params: idParams } },
    async (request) => presentAnnouncement(await announcements.end(request.params.id)),
  );
};
