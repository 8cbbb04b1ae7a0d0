import type { FastifyPluginAsync } from 'fastify';
import type { Services } from '../app-services.ts';
import type { UsageGroup } from '../../store/usage-repo.ts';
import { type KindCounts, presentKinds } from '../../store/token-counts.ts';
import { iso, usd } from '../present.ts';
import { userOf } from './principal.ts';
import {
  dailyByModelSchema,
  recentRequestsSchema,
  segmentedStatsSchema,
  usageSchema,
  type DailyByModel,
  type RecentRequests,
  type Usage,
  type SegmentedStats,
} from '../schemas/api.ts';

const DAY = '^\\d{4}-\\d{2}-\\d{2}$';
const GROUP_FIELD: Record<UsageGroup, string> = { day: 'day', model: 'model', key: 'key_id' };

/** `/api/usage`: the account's usage from the daily rollup, its recent requests, its chart by day and model. */
export const usageRoutes: FastifyPluginAsync<Pick<Services, 'usage'>> = async (app, services) => {
  app.get<{ Querystring: { from?: string; to?: string; group_by?: UsageGroup } }>(
    '',
    {
      config: { auth: 'user' },
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            from: { type: 'string', pattern: DAY, description: 'a UTC day such as 2026-01-31' },
            to: { type: 'string', pattern: DAY, description: 'a UTC day such as 2026-01-31' },
            group_by: { type: 'string', enum: ['day', 'model', 'key'] },
          },
        },
        response: { 200: usageSchema },
      },
    },
    async (request) => {
      const { from, to, groupBy, rows, total } = await services.usage.summary(userOf(request).account.id, {
        from: request.query.from,
        to: request.query.to,
        groupBy: request.query.group_by,
      });
      const present = (
        row: {
          requests: number;
          promptTokens: number;
          completionTokens: number;
          costMicros: number;
        } & KindCounts,
      ) => ({
        requests: row.requests,
        prompt_tokens: row.promptTokens,
        completion_tokens: row.completionTokens,
        total_tokens: row.promptTokens + row.completionTokens,
        ...presentKinds(row.promptTokens, row),
        cost_usd: usd(row.costMicros),
      });
      return {
        object: 'list',
        from,
        to,
        group_by: groupBy,
        data: rows.map((row) => ({ [GROUP_FIELD[groupBy]]: row.group, ...present(row) })),
        total: present(total),
      } satisfies Usage;
    },
  );

  // The dashboard's recent requests.
  app.get<{ Querystring: { limit?: string } }>(
    '/recent',
    {
      config: { auth: 'user' },
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            limit: {
              type: 'string',
              pattern: '^[1-9][0-9]{0,2}$',
              description: 'a whole number from 1 to 999 (at most 100 are listed)',
            },
          },
        },
        response: { 200: recentRequestsSchema },
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
          ...presentKinds(row.promptTokens, row),
          cost_usd: usd(row.costMicros),
          status: row.status,
          latency_ms: row.latencyMs,
          created_at: iso(row.createdAt),
        })),
      } satisfies RecentRequests;
    },
  );

  // The last 30 UTC days by day and model, for the overview's chart.
  app.get(
    '/daily-by-model',
    { config: { auth: 'user' }, schema: { response: { 200: dailyByModelSchema } } },
    async (request): Promise<DailyByModel> => {
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
    },
  );
};

/** `/api/stats`: the spec's statistics endpoint (`GET /api/stats/segmented`), for the admin key or an operator. */
export const statsRoutes: FastifyPluginAsync<Pick<Services, 'usage'>> = async (app, services) => {
  app.get(
    '/segmented',
    { config: { auth: 'admin' }, schema: { response: { 200: segmentedStatsSchema } } },
    async (): Promise<SegmentedStats> => {
      const stats = await services.usage.segmentedStats();
      return {
        total_users: stats.totalUsers,
        verified_users: stats.verifiedUsers,
        active_users_7d: stats.activeUsers7d,
        active_users_30d: stats.activeUsers30d,
        paid_users: stats.paidUsers,
        today_tokens: stats.todayTokens,
        today_cost: usd(stats.todayCostMicros),
      };
    },
  );
};
