import type { FastifyPluginAsync } from 'fastify';
import type { PlanId } from '../../core/config.ts';
import type { Services } from '../app-services.ts';
import { iso, usd } from '../present.ts';
import { usdToMicros } from '../../core/money.ts';
import { parseAccountQuery } from '../parse-account-query.ts';
import { presentAdminAccount } from '../present-operator.ts';
import { PAGE_QUERY, suspensionReason } from './operator-routes.ts';

const idParams = { type: 'object', properties: { id: { type: 'string', maxLength: 100 } } } as const;
const nullableLimit = { type: ['integer', 'null'], minimum: 0 } as const;

/** `/api/admin/accounts`: the operator's controls over accounts; every route needs the admin key or an operator. */
export const adminRoutes: FastifyPluginAsync<Pick<Services, 'accounts' | 'config' | 'operators'>> = async (
  app,
  services,
) => {
  const config = { auth: 'admin' } as const;
  const { accounts } = services;

  app.get<{ Querystring: Record<string, string | undefined> }>(
    '',
    {
      config,
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            search: { type: 'string', maxLength: 254 },
            plan: { type: 'string', maxLength: 50 },
            status: { type: 'string', enum: ['active', 'suspended'] },
            sort: { type: 'string', enum: ['created_at', 'email', 'last_active_at'] },
            order: { type: 'string', enum: ['asc', 'desc'] },
            ...PAGE_QUERY,
          },
        },
      },
    },
    async (request) => {
      const query = parseAccountQuery(request.query, services.config);
      const page = await services.operators.accounts.search(query);
      return {
        object: 'list',
        data: page.accounts.map((found) => presentAdminAccount(found.account, found.balanceMicros)),
        total: page.total,
        limit: query.limit,
        offset: query.offset,
      };
    },
  );

  app.get<{ Params: { id: string } }>('/:id', { config, schema: { params: idParams } }, async (request) =>
    presentAdminAccount(await accounts.account(request.params.id)),
  );

  app.post<{ Params: { id: string } }>(
    '/:id/suspend',
    { config, schema: { params: idParams } },
    async (request) =>
      presentAdminAccount(
        await services.operators.accounts.suspend(request.params.id, suspensionReason(request.body)),
      ),
  );

  app.post<{ Params: { id: string } }>(
    '/:id/unsuspend',
    { config, schema: { params: idParams } },
    async (request) => presentAdminAccount(await services.operators.accounts.unsuspend(request.params.id)),
  );

  app.put<{ Params: { id: string }; Body: { plan: PlanId } }>(
    '/:id/plan',
    {
      config,
      schema: {
        params: idParams,
        body: {
          type: 'object',
          required: ['plan'],
          additionalProperties: false,
          properties: { plan: { type: 'string' } },
        },
      },
    },
    async (request) => presentAdminAccount(await accounts.setPlan(request.params.id, request.body.plan)),
  );

  app.put<{
    Params: { id: string };
    Body: {
      rpm?: number | null;
      tpm?: number | null;
      daily_tokens?: number | null;
      credit_limit_usd?: number;
    };
  }>(
    '/:id/limits',
    {
      config,
      schema: {
        params: idParams,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            rpm: nullableLimit,
            tpm: nullableLimit,
            daily_tokens: nullableLimit,
            credit_limit_usd: { type: 'number', minimum: 0 },
          },
        },
      },
    },
    async (request) => {
      const body = request.body;
      const account = await accounts.setLimits(request.params.id, {
        ...(body.rpm !== undefined ? { rpmLimit: body.rpm } : {}),
        ...(body.tpm !== undefined ? { tpmLimit: body.tpm } : {}),
        ...(body.daily_tokens !== undefined ? { dailyTokenLimit: body.daily_tokens } : {}),
        ...(body.credit_limit_usd !== undefined
          ? { creditLimitMicros: usdToMicros(body.credit_limit_usd) }
          : {}),
      });
      return presentAdminAccount(account);
    },
  );

  app.post<{ Params: { id: string }; Body: { amount_usd: number; expires_at?: string } }>(
    '/:id/credits',
    {
      config,
      schema: {
        params: idParams,
        body: {
          type: 'object',
          required: ['amount_usd'],
          additionalProperties: false,
          properties: {
            amount_usd: { type: 'number', exclusiveMinimum: 0, maximum: 1_000_000 },
            expires_at: { type: 'string', format: 'date-time' },
          },
        },
      },
    },
    async (request, reply) => {
      const { amount_usd, expires_at } = request.body;
      const grant = await accounts.grantCredit(
        request.params.id,
        usdToMicros(amount_usd),
        expires_at === undefined ? undefined : Date.parse(expires_at),
      );
      return reply.status(201).send({
        id: grant.id,
        account_id: grant.accountId,
        kind: grant.kind,
        amount_usd: usd(grant.amountMicros),
        expires_at: iso(grant.expiresAt),
      });
    },
  );
};
