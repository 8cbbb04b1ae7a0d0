import type { FastifyPluginAsync } from 'fastify';
import { presentKeyControls } from '../../accounts/key-controls.ts';
import type { Services } from '../app-services.ts';
import { iso, usd } from '../present.ts';
import { asUser } from './principal.ts';

/**
 * `GET /api/key`: the calling key's own controls, its spend today, this ISO week and this calendar month
 * (UTC), and what its limit still allows, so a script can check before it spends.
 */
export const ownKeyRoutes: FastifyPluginAsync<Pick<Services, 'accounts'>> = async (app, services) => {
  app.get('', { config: { auth: 'user' } }, async (request) => {
    const { key } = asUser(request.principal);
    const status = await services.accounts.keyStatus(key);
    return {
      id: key.id,
      name: key.name,
      prefix: key.prefix,
      ...presentKeyControls(key.controls),
      usage: {
        today_usd: usd(status.todayMicros),
        this_week_usd: usd(status.weekMicros),
        this_month_usd: usd(status.monthMicros),
        this_period_usd: usd(status.periodMicros),
      },
      held_usd: usd(status.heldMicros),
      remaining_usd: status.remainingMicros === null ? null : usd(status.remainingMicros),
      period_started_at: iso(status.periodStartedAt),
      resets_at: iso(status.resetsAt),
    };
  });
};
