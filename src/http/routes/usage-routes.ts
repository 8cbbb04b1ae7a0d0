import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.ts';
import { GatewayError } from '../../shared/gateway-error.ts';
import { utcDay } from '../../store/ledger-repo.ts';
import type { UsageGroup } from '../../store/usage-repo.ts';
import { usd } from '../present.ts';
import { userOf } from './principal.ts';

const DAY = '^\\d{4}-\\d{2}-\\d{2}$';
const GROUP_FIELD: Record<UsageGroup, string> = { day: 'day', model: 'model', key: 'key_id' };

/** The account's usage from the daily rollup, and the operator's statistics. */
export function usageRoutes(app: FastifyInstance, services: Services): void {
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
      const now = services.clock();
      const to = request.query.to ?? utcDay(now);
      const from = request.query.from ?? utcDay(Date.parse(`${to}T00:00:00Z`) - 29 * 86_400_000);
      if (Number.isNaN(Date.parse(`${from}T00:00:00Z`)) || Number.isNaN(Date.parse(`${to}T00:00:00Z`))) {
        throw new GatewayError('invalid_request', 'from and to must be dates as YYYY-MM-DD');
      }
      if (from > to) throw new GatewayError('invalid_request', 'from must not be after to');
      const groupBy = request.query.group_by ?? 'day';
      const rows = await services.store.usage.summary(userOf(request).account.id, from, to, groupBy);
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
      const total = rows.reduce(
        (sum, row) => ({
          requests: sum.requests + row.requests,
          promptTokens: sum.promptTokens + row.promptTokens,
          completionTokens: sum.completionTokens + row.completionTokens,
          costMicros: sum.costMicros + row.costMicros,
        }),
        { requests: 0, promptTokens: 0, completionTokens: 0, costMicros: 0 },
      );
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
    const paidPlans = [...services.config.plans.values()]
      .filter((plan) => plan.monthlyPriceMicros > 0 || plan.id === 'enterprise')
      .map((plan) => plan.id);
    const stats = await services.store.usage.stats(services.clock(), paidPlans);
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
