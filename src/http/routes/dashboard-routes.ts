import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.ts';
import { iso, usd } from '../present.ts';
import { userOf } from './principal.ts';

/** Read-only views the dashboard needs beyond the rest of `/api`: recent requests, the webhook event log. */
export function dashboardRoutes(app: FastifyInstance, services: Pick<Services, 'usage' | 'webhooks'>): void {
  app.get<{ Querystring: { limit?: string } }>(
    '/api/usage/recent',
    {
      config: { auth: 'user' },
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { limit: { type: 'string', pattern: '^[1-9][0-9]{0,2}$' } },
        },
      },
    },
    async (request) => {
      const limit = Math.min(100, Number(request.query.limit ?? 20));
      const rows = await services.usage.recent(userOf(request).account.id, limit);
      return {
        object: 'list',
        data: rows.map((row) => ({
          request_id: row.requestId,
          key_id: row.keyId,
          model: row.model,
          prompt_tokens: row.promptTokens,
          completion_tokens: row.completionTokens,
          total_tokens: row.promptTokens + row.completionTokens,
          cost_usd: usd(row.costMicros),
          status: row.status,
          latency_ms: row.latencyMs,
          created_at: iso(row.createdAt),
        })),
      };
    },
  );

  app.get('/api/webhooks/events', { config: { auth: 'user' } }, async (request) => {
    const events = await services.webhooks.events(userOf(request).account.id);
    return {
      object: 'list',
      data: events.map((event) => ({
        id: event.id,
        event_type: event.eventType,
        status: event.status,
        attempts: event.attempts,
        last_status_code: event.lastStatusCode,
        next_attempt_at: event.status === 'pending' ? iso(event.nextAttemptAt) : null,
        created_at: iso(event.createdAt),
        finished_at: iso(event.finishedAt),
      })),
    };
  });

  // The last 30 UTC days by day and model, for the overview's chart.
  app.get('/api/usage/daily-by-model', { config: { auth: 'user' } }, async (request) => {
    const { from, to, rows } = await services.usage.dailyByModel(userOf(request).account.id);
    return {
      object: 'list',
      from,
      to,
      data: rows.map((row) => ({
        day: row.day,
        model: row.model,
        requests: row.requests,
        total_tokens: row.tokens,
        cost_usd: usd(row.costMicros),
      })),
    };
  });
}
