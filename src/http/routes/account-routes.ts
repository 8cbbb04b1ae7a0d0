import type { FastifyPluginAsync } from 'fastify';
import type { Services } from '../app-services.ts';
import { presentAccount, presentBalance } from '../present.ts';
import { userOf } from './principal.ts';

/** `/api/account`: the key's own account: identity, plan, limits, balance and today's tokens. */
export const accountRoutes: FastifyPluginAsync<Pick<Services, 'accounts'>> = async (app, services) => {
  app.get('', { config: { auth: 'user' } }, async (request) => {
    const summary = await services.accounts.summary(userOf(request).account);
    const { limits, standing } = summary;
    return {
      ...presentAccount(summary.account),
      limits: {
        requests_per_minute: limits.requestsPerMinute,
        tokens_per_minute: limits.tokensPerMinute,
        daily_tokens: limits.dailyTokens,
      },
      ...presentBalance(summary.balance, summary.grants),
      daily_tokens_used: summary.dailyTokensUsed,
      billing_status: standing.ok ? 'ok' : standing.reason,
      billing_message: standing.ok ? null : standing.message,
    };
  });
};
