import type { FastifyPluginAsync } from 'fastify';
import { isCidr, type KeyChange } from '../../accounts/accounts-service.ts';
import { LIMIT_PERIODS } from '../../accounts/key-controls.ts';
import type { Config } from '../../core/config.ts';
import { NO_KEY_CONTROLS, type KeyControls, type LimitPeriod } from '../../core/records.ts';
import type { Services } from '../app-services.ts';
import { GatewayError } from '../../core/gateway-error.ts';
import { iso, presentKey, usd } from '../present.ts';
import { userOf } from './principal.ts';
import { usdToMicros } from '../../core/money.ts';

/** Per-key controls as a client sends them (create and change). */
const controlProperties = {
  limit_usd: { type: ['number', 'null'], minimum: 0, maximum: 1_000_000 },
  limit_period: { type: ['string', 'null'], enum: [...LIMIT_PERIODS, null] },
  expires_at: { type: ['string', 'null'], maxLength: 64 },
  allowed_models: { type: ['array', 'null'], maxItems: 100, items: { type: 'string', maxLength: 200 } },
} as const;

const keyProperties = {
  name: { type: 'string', minLength: 1, maxLength: 100 },
  allowed_ips: { type: ['array', 'null'], maxItems: 100, items: { type: 'string', maxLength: 64 } },
  ...controlProperties,
} as const;

const createSchema = {
  body: { type: 'object', additionalProperties: false, properties: keyProperties },
} as const;

interface KeyBody {
  name?: string;
  allowed_ips?: string[] | null;
  limit_usd?: number | null;
  limit_period?: LimitPeriod | null;
  expires_at?: string | null;
  allowed_models?: string[] | null;
}

/** The allow-list as given: a bad block is a 400 naming it; an empty list means anywhere. */
function parseAllowedIps(allowedIps: string[] | null): string[] | null {
  const bad = allowedIps?.find((cidr) => !isCidr(cidr));
  if (bad !== undefined)
    throw new GatewayError('invalid_request', `body.allowed_ips: ${bad} is not an IP address or CIDR block`);
  return allowedIps && allowedIps.length > 0 ? allowedIps : null;
}

/** The controls a body changes (absent fields stay as they are); each bad value is a 400 naming its field. */
function parseKeyChange(body: KeyBody, config: Config, now: number): KeyChange {
  const change: KeyChange = {};
  if (body.name !== undefined) change.name = body.name;
  if (body.allowed_ips !== undefined) change.allowedIps = parseAllowedIps(body.allowed_ips);
  if (body.limit_usd !== undefined)
    change.spendLimitMicros = body.limit_usd === null ? null : usdToMicros(body.limit_usd);
  if (body.limit_period !== undefined) change.limitPeriod = body.limit_period;
  if (body.expires_at !== undefined) {
    if (body.expires_at === null) change.expiresAt = null;
    else {
      const at = Date.parse(body.expires_at);
      if (!/^\d{4}-\d{2}-\d{2}T/.test(body.expires_at) || Number.isNaN(at))
        throw new GatewayError(
          'invalid_request',
          'body.expires_at: give an ISO 8601 date-time such as 2027-01-31T00:00:00Z',
        );
      if (at <= now) throw new GatewayError('invalid_request', 'body.expires_at: must be in the future');
      change.expiresAt = at;
    }
  }
  if (body.allowed_models !== undefined) {
    const models = body.allowed_models;
    if (models !== null) {
      if (models.length === 0)
        throw new GatewayError(
          'invalid_request',
          'body.allowed_models: give at least one model, or null for every model',
        );
      const unknown = models.find((id) => !config.models.has(id));
      if (unknown !== undefined)
        throw new GatewayError('invalid_request', `body.allowed_models: ${unknown} is not a model`);
    }
    change.allowedModels = models && [...new Set(models)];
  }
  return change;
}

/** The controls of a new key from its change: a limit without a period never resets. */
function controlsOf(change: KeyChange): KeyControls {
  if (change.spendLimitMicros == null && change.limitPeriod != null)
    throw new GatewayError('invalid_request', 'body.limit_period: set limit_usd too');
  const spendLimitMicros = change.spendLimitMicros ?? null;
  return {
    ...NO_KEY_CONTROLS,
    spendLimitMicros,
    limitPeriod: spendLimitMicros === null ? null : (change.limitPeriod ?? 'never'),
    expiresAt: change.expiresAt ?? null,
    allowedModels: change.allowedModels ?? null,
  };
}

const idParams = {
  params: { type: 'object', properties: { id: { type: 'string', maxLength: 100 } } },
} as const;

/** `/api/keys`: the account's API keys: list (never the secret), create and rotate (secret once), change, revoke. */
export const keyRoutes: FastifyPluginAsync<Pick<Services, 'accounts' | 'config' | 'clock'>> = async (
  app,
  services,
) => {
  const config = { auth: 'user' } as const;

  app.get('', { config }, async (request) => {
    const overview = await services.accounts.keyOverview(userOf(request).account.id);
    // A limited key also shows its spend this period and what remains.
    const data = overview.map(({ key, lastUsedAt, status }) => ({
      ...presentKey(key),
      last_used_at: iso(lastUsedAt),
      spent_this_period_usd: status ? usd(status.periodMicros) : null,
      remaining_usd: status ? usd(status.remainingMicros ?? 0) : null,
      resets_at: status ? iso(status.resetsAt) : null,
    }));
    return { object: 'list', data };
  });

  app.post<{ Body: KeyBody | undefined }>('', { config, schema: createSchema }, async (request, reply) => {
    const change = parseKeyChange(request.body ?? {}, services.config, services.clock());
    const issued = await services.accounts.createKey(
      userOf(request).account.id,
      change.name ?? 'unnamed',
      change.allowedIps ?? null,
      controlsOf(change),
    );
    return reply.status(201).send(issued);
  });

  app.patch<{ Params: { id: string }; Body: KeyBody | undefined }>(
    '/:id',
    { config, schema: { ...idParams, ...createSchema } },
    async (request) => {
      const change = parseKeyChange(request.body ?? {}, services.config, services.clock());
      const key = await services.accounts.updateKey(userOf(request).account.id, request.params.id, change);
      return presentKey(key);
    },
  );

  app.delete<{ Params: { id: string } }>('/:id', { config, schema: idParams }, async (request) => {
    const key = await services.accounts.revokeKey(userOf(request).account.id, request.params.id);
    return presentKey(key);
  });

  app.post<{ Params: { id: string } }>('/:id/rotate', { config, schema: idParams }, async (request) => {
    return services.accounts.rotateKey(userOf(request).account.id, request.params.id);
  });
};
