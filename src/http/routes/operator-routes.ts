import type { FastifyPluginAsync } from 'fastify';
import type { Services } from '../app-services.ts';
import { GatewayError } from '../../core/gateway-error.ts';
import { actorOf, noteAudit } from '../operator-audit.ts';
import { linkOrigin } from '../link-origin.ts';
import { presentAdminAccount, presentAuditEntry } from '../present-operator.ts';
import { iso, presentDelivery, presentKey, usd } from '../present.ts';
import { presentOrder } from './billing-routes.ts';

const config = { auth: 'admin' } as const;
const idParams = { type: 'object', properties: { id: { type: 'string', maxLength: 100 } } } as const;
/** `limit` and `offset` of a listing that pages (in the query string, so as text). */
export const PAGE_QUERY = {
  limit: {
    type: 'string',
    pattern: '^(?:[1-9]\\d?|[1-4]\\d\\d|500)$',
    description: 'a whole number from 1 to 500',
  },
  offset: { type: 'string', pattern: '^\\d{1,9}$', description: 'a whole number from 0 to 999999999' },
} as const;

/**
 * Under `/api/admin`: operators (granting the role), an account's whole page, its keys, verification mail,
 * the audit log.
 */
export const operatorRoutes: FastifyPluginAsync<Pick<Services, 'accounts' | 'config' | 'operators'>> = async (
  app,
  services,
) => {
  const { accounts } = services.operators;

  app.get('/operators', { config }, async () => ({
    object: 'list',
    data: (await accounts.operators()).map((account) => presentAdminAccount(account)),
  }));

  app.post<{ Body: { email: string } }>(
    '/operators',
    {
      config,
      schema: {
        body: {
          type: 'object',
          required: ['email'],
          additionalProperties: false,
          properties: { email: { type: 'string', minLength: 3, maxLength: 254 } },
        },
      },
    },
    async (request) => {
      const account = await accounts.byEmail(request.body.email);
      noteAudit(request, { accountId: account.id });
      return presentAdminAccount(await accounts.setRole(account.id, 'operator'));
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/operators/:id',
    { config, schema: { params: idParams } },
    async (request) =>
      presentAdminAccount(await accounts.revokeOperator(request.params.id, actorOf(request).actorAccountId)),
  );

  app.get<{ Params: { id: string } }>(
    '/accounts/:id/detail',
    { config, schema: { params: idParams } },
    async (request) => {
      const detail = await accounts.detail(request.params.id);
      return {
        account: presentAdminAccount(detail.account, detail.balanceMicros),
        credits: detail.grants.map((grant) => ({
          id: grant.id,
          kind: grant.kind,
          amount_usd: usd(grant.amountMicros),
          remaining_usd: usd(grant.remainingMicros),
          expires_at: iso(grant.expiresAt),
          created_at: iso(grant.createdAt),
          source: grant.source,
        })),
        keys: detail.keys.map(({ key, lastUsedAt }) => ({
          ...presentKey(key),
          last_used_at: iso(lastUsedAt),
        })),
        usage: {
          last_30_days: detail.usageByDay.map((row) => ({
            day: row.group,
            requests: row.requests,
            tokens: row.promptTokens + row.completionTokens,
            cost_usd: usd(row.costMicros),
          })),
        },
        orders: detail.orders.map(presentOrder),
        webhook_deliveries: detail.deliveries.map(presentDelivery),
      };
    },
  );

  app.post<{ Params: { id: string } }>(
    '/accounts/:id/resend-verification',
    { config, schema: { params: idParams } },
    async (request, reply) => {
      const baseUrl = linkOrigin(request.server, services.config);
      await accounts.resendVerification(request.params.id, baseUrl);
      return reply.status(202).send({ sent: true });
    },
  );

  app.get<{ Params: { id: string } }>(
    '/accounts/:id/keys',
    { config, schema: { params: idParams } },
    async (request) => ({
      object: 'list',
      data: (await accounts.keys(request.params.id)).map(presentKey),
    }),
  );

  app.delete<{ Params: { id: string; keyId: string } }>(
    '/accounts/:id/keys/:keyId',
    {
      config,
      schema: {
        params: {
          type: 'object',
          properties: { id: { type: 'string', maxLength: 100 }, keyId: { type: 'string', maxLength: 100 } },
        },
      },
    },
    async (request) => presentKey(await services.accounts.revokeKey(request.params.id, request.params.keyId)),
  );

  app.get<{ Querystring: { limit?: string; offset?: string; account_id?: string } }>(
    '/audit',
    {
      config,
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { ...PAGE_QUERY, account_id: { type: 'string', maxLength: 100 } },
        },
      },
    },
    async (request) => {
      const limit = Number(request.query.limit ?? 50);
      const offset = Number(request.query.offset ?? 0);
      const found = await services.operators.auditLog(
        request.query.account_id === undefined ? {} : { accountId: request.query.account_id },
        limit,
        offset,
      );
      return {
        object: 'list',
        data: found.entries.map(presentAuditEntry),
        total: found.total,
        limit,
        offset,
      };
    },
  );
};

/** Reads an optional `{reason}` body of a suspension: a string of at most 500 characters, or nothing. */
export function suspensionReason(body: unknown): string | null {
  if (body === undefined || body === null) return null;
  const reason = typeof body === 'object' ? (body as Record<string, unknown>)['reason'] : undefined;
  if (reason === undefined || reason === null) return null;
  if (typeof reason !== 'string' || reason.length > 500)
    throw new GatewayError('invalid_request', 'body.reason must be a string of at most 500 characters', {
      param: 'reason',
    });
  return reason.trim() === '' ? null : reason.trim();
}
