import { Readable } from 'node:stream';
import type { FastifyPluginAsync } from 'fastify';
import type { Services } from '../app-services.ts';
import { GatewayError } from '../../core/gateway-error.ts';
import { DAY_MS } from '../../core/time.ts';
import type { ExportedUsage } from '../../operators/operator-reports.ts';
import { noteAudit } from '../operator-audit.ts';
import { presentKinds } from '../../store/token-counts.ts';
import { iso, usd } from '../present.ts';
import {
  dailyStatsSchema,
  deploymentsSchema,
  queuedEventSchema,
  webhookHealthSchema,
  type DailyStats,
  type Deployments,
  type WebhookHealth,
} from '../schemas/api.ts';

const config = { auth: 'admin' } as const;
const CSV_COLUMNS =
  'request_id,account_id,key_id,model,status,prompt_tokens,completion_tokens,total_tokens,cost_usd,created_at,input_tokens,cached_input_tokens,cache_write_tokens,cache_write_1h_tokens,reasoning_tokens\n';

/** Under `/api/admin`: operators' reports: statistics over time, deployments' health, the webhook backlog, the usage export. */
export const operatorReportRoutes: FastifyPluginAsync<Pick<Services, 'operators'>> = async (
  app,
  services,
) => {
  const { reports } = services.operators;

  app.get<{ Querystring: { days?: string } }>(
    '/stats/daily',
    {
      config,
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            days: {
              type: 'string',
              pattern: '^(?:[1-9]\\d?|[1-3]\\d\\d)$',
              description: 'a whole number from 1 to 399 (at most 366 days are shown)',
            },
          },
        },
        response: { 200: dailyStatsSchema },
      },
    },
    async (request): Promise<DailyStats> => {
      const stats = await reports.daily(Math.min(366, Number(request.query.days ?? 30)));
      return {
        object: 'list',
        data: stats.days.map((row) => ({
          day: row.day,
          requests: row.requests,
          tokens: row.tokens,
          spend_usd: usd(row.spendMicros),
          revenue_usd: usd(row.revenueMicros),
          new_accounts: row.newAccounts,
        })),
        by_plan: stats.byPlan.map((r) => ({
          plan: r.key,
          day: r.day,
          requests: r.requests,
          spend_usd: usd(r.spendMicros),
        })),
        by_model: stats.byModel.map((r) => ({
          model: r.key,
          day: r.day,
          requests: r.requests,
          tokens: r.tokens,
          spend_usd: usd(r.spendMicros),
        })),
      };
    },
  );

  // From the router's in-process measurements only: drawing this page calls no upstream.
  app.get(
    '/deployments',
    { config, schema: { response: { 200: deploymentsSchema } } },
    async (): Promise<Deployments> => ({
      object: 'list',
      data: reports.deployments().map((stat) => ({
        model: stat.model,
        deployment: stat.deployment,
        provider: stat.provider,
        upstream_model: stat.upstreamModel,
        circuit: stat.circuit,
        requests_5m: stat.requests,
        error_rate_5m: stat.errorRate,
        latency_p50_ms: stat.latencyP50Ms,
        ttft_p50_ms: stat.ttftP50Ms,
      })),
    }),
  );

  app.get(
    '/webhooks',
    { config, schema: { response: { 200: webhookHealthSchema } } },
    async (): Promise<WebhookHealth> => {
      const { backlog, failing } = await reports.webhooks();
      return {
        backlog: {
          pending: backlog.pending,
          failing: backlog.failing,
          oldest_pending_at: iso(backlog.oldestPendingAt),
        },
        failing_endpoints: failing.map((endpoint) => ({
          account_id: endpoint.accountId,
          email: endpoint.email,
          url: endpoint.url,
          consecutive_failures: endpoint.consecutiveFailures,
          last_error: endpoint.lastError,
          last_attempt_at: iso(endpoint.lastAttemptAt),
          last_delivery_id: endpoint.lastDeliveryId,
        })),
      };
    },
  );

  app.post<{ Params: { id: string } }>(
    '/webhooks/deliveries/:id/redeliver',
    {
      config,
      schema: {
        params: { type: 'object', properties: { id: { type: 'string', maxLength: 100 } } },
        response: { 202: queuedEventSchema },
      },
    },
    async (request, reply) => {
      const { accountId, eventId } = await reports.redeliver(request.params.id);
      noteAudit(request, { accountId, details: { event_id: eventId } });
      return reply.status(202).send({ event_id: eventId, status: 'queued' });
    },
  );

  app.get<{ Querystring: { from: string; to: string; format?: 'csv' | 'jsonl'; account_id?: string } }>(
    '/usage/export',
    {
      config,
      schema: {
        querystring: {
          type: 'object',
          required: ['from', 'to'],
          additionalProperties: false,
          properties: {
            from: { type: 'string', maxLength: 40 },
            to: { type: 'string', maxLength: 40 },
            format: { type: 'string', enum: ['csv', 'jsonl'] },
            account_id: { type: 'string', maxLength: 100 },
          },
        },
        produces: ['text/csv', 'application/x-ndjson'],
      },
    },
    async (request, reply) => {
      const from = parseInstant(request.query.from, 'from', false);
      const to = parseInstant(request.query.to, 'to', true);
      if (to <= from) throw new GatewayError('invalid_request', 'to must be after from', { param: 'to' });
      const format = request.query.format ?? 'csv';
      const range = {
        from,
        to,
        ...(request.query.account_id !== undefined ? { accountId: request.query.account_id } : {}),
      };
      const lines = exportLines(reports.usagePages(range), format);
      return reply
        .type(format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson')
        .header('content-disposition', `attachment; filename="usage.${format}"`)
        .send(Readable.from(lines));
    },
  );
};

/** An ISO date or date-time; a bare date as `to` means the end of that day (the range includes it). */
function parseInstant(text: string, param: string, endOfDay: boolean): number {
  const ms = Date.parse(text);
  if (!Number.isFinite(ms))
    throw new GatewayError('invalid_request', `${param} must be an ISO 8601 date or date-time`, { param });
  return endOfDay && /^\d{4}-\d{2}-\d{2}$/.test(text) ? ms + DAY_MS : ms;
}

async function* exportLines(
  pages: AsyncIterable<ExportedUsage[]>,
  format: 'csv' | 'jsonl',
): AsyncGenerator<string> {
  if (format === 'csv') yield CSV_COLUMNS;
  for await (const rows of pages)
    yield rows.map((row) => (format === 'csv' ? csvLine(row) : `${JSON.stringify(jsonOf(row))}\n`)).join('');
}

function jsonOf(row: ExportedUsage): Record<string, unknown> {
  return {
    request_id: row.requestId,
    account_id: row.accountId,
    key_id: row.keyId,
    model: row.model,
    status: row.status,
    prompt_tokens: row.promptTokens,
    completion_tokens: row.completionTokens,
    total_tokens: row.promptTokens + row.completionTokens,
    cost_usd: usd(row.costMicros),
    created_at: iso(row.createdAt),
    // After the original columns, so a reader of the older export finds them where they were.
    ...presentKinds(row.promptTokens, row),
  };
}

/** Ids, model names and statuses never hold a comma, quote or newline; quoted anyway should one appear. */
const csvField = (value: unknown): string => {
  const text = String(value);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};

const csvLine = (row: ExportedUsage): string => `${Object.values(jsonOf(row)).map(csvField).join(',')}\n`;
