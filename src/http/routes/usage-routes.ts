import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.ts';
import type { UsageGroup } from '../../store/usage-repo.ts';
import { usd } from '../present.ts';
import { userOf } from './principal.ts';

const DAY = '^\\d{4}-\\d{2}-\\d{2}$';
const GROUP_FIELD: Record<UsageGroup, string> = { day: 'day', model: 'model', key: 'key_id' };

/** The account's usage from the daily rollup, and the operator's statistics. */
export function usageRoutes(app: FastifyInstance, services: Pick<Services, 'usage'>): void {
  app.get<{ Querystring: { from?: string; to?: string; group_by?: UsageGroup } }>(
    '/api/usage',
    {
      config: { auth: 'user' },
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            from: { type: 'string', pattern: DAY },
            to: { type: 'string', pattern: DAY },
            group_by: { type: 'string', enum: ['day', 'model', 'key'] },
          },
        },
      },
    },
    async (request) => {
      const { from, to, groupBy, rows, total } = await services.usage.summary(userOf(request).account.id, {
        from: request.query.from,
        to: request.query.to,
        groupBy: request.query.group_by,
      });
      const present = (row: {
        requests: number;
        promptTokens: number;
        completionTokens: number;
        costMicros: number;
      }) => ({
        requests: row.requests,
        prompt_tokens: row.promptTokens,
        completion_tokens: row.completionTokens,
        total_tokens: row.promptTokens + row.completionTokens,
        cost_usd: usd(row.costMicros),
      });
      return {
        object: 'list',
        from,
        to,
        group_by: groupBy,
        data: rows.map((row) => ({ [GROUP_FIELD[groupBy]]: row.group, ...present(row) })),
        total: present(total),
      };
    },
  );

  app.get('/api/stats/segmented', { config: { auth: 'admin' } }, async () => {
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
  });
}
