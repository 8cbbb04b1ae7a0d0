import type { FastifyInstance } from 'fastify';
import type { PlanId } from '../../config/config.ts';
import type { Services } from '../../services.ts';
import { GatewayError } from '../../shared/gateway-error.ts';
import { newId } from '../../shared/ids.ts';
import { iso, usd } from '../present.ts';
import { parseAccountQuery } from '../parse-account-query.ts';
import { presentAdminAccount } from '../present-operator.ts';
import { suspensionReason } from './operator-routes.ts';

const idParams = { type: 'object', properties: { id: { type: 'string', maxLength: 100 } } } as const;
const nullableLimit = { type: ['integer', 'null'], minimum: 0 } as const;

/** The operator's controls over accounts; every route needs the admin key or an operator. */
export function adminRoutes(app: FastifyInstance, services: Services): void {
  const config = { auth: 'admin' } as const;
  const { accounts } = services;

  app.get<{ Querystring: Record<string, string | undefined> }>(
    '/api/admin/accounts',
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
            limit: { type: 'string', pattern: '^(?:[1-9]\\d?|[1-4]\\d\\d|500)$' },
            offset: { type: 'string', pattern: '^\\d{1,9}$' },
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

  app.get<{ Params: { id: string } }>(
    '/api/admin/accounts/:id',
    { config, schema: { params: idParams } },
    async (request) => presentAdminAccount(await accounts.account(request.params.id)),
  );

  app.post<{ Params: { id: string } }>(
    '/api/admin/accounts/:id/suspend',
    { config, schema: { params: idParams } },
    async (request) =>
      presentAdminAccount(
        await services.operators.accounts.suspend(request.params.id, suspensionReason(request.body)),
      ),
  );

  app.post<{ Params: { id: string } }>(
    '/api/admin/accounts/:id/unsuspend',
    { config, schema: { params: idParams } },
    async (request) => presentAdminAccount(await services.operators.accounts.unsuspend(request.params.id)),
  );

  app.put<{ Params: { id: string }; Body: { plan: PlanId } }>(
    '/api/admin/accounts/:id/plan',
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
    '/api/admin/accounts/:id/limits',
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
          ? { creditLimitMicros: Math.round(body.credit_limit_usd * 1_000_000) }
          : {}),
      });
      return presentAdminAccount(account);
    },
  );

  app.post<{ Params: { id: string }; Body: { amount_usd: number; expires_at?: string } }>(
    '/api/admin/accounts/:id/credits',
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
      const now = services.clock();
      const account = await accounts.account(request.params.id);
      const expiresAt =
        request.body.expires_at === undefined ? now + 365 * 86_400_000 : Date.parse(request.body.expires_at);
      if (!(expiresAt > now))
        throw new GatewayError('invalid_request', 'body.expires_at must be in the future');
      const amountMicros = Math.round(request.body.amount_usd * 1_000_000);
      const grant = {
        id: newId('grant'),
        accountId: account.id,
        kind: 'admin' as const,
        amountMicros,
        remainingMicros: amountMicros,
        expiresAt,
        createdAt: now,
        source: 'admin',
      };
      await services.store.ledger.addGrant(grant);
      return reply.status(201).send({
        id: grant.id,
        account_id: account.id,
        kind: grant.kind,
        amount_usd: usd(amountMicros),
        expires_at: iso(expiresAt),
      });
    },
  );
}
