import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.ts';
import { utcDay } from '../../store/ledger-repo.ts';
import { presentAccount, presentBalance } from '../present.ts';
import { userOf } from './principal.ts';

/** The key's own account: identity, plan, limits, balance and today's tokens. */
export function accountRoutes(app: FastifyInstance, services: Services): void {
  app.get('/api/account', { config: { auth: 'user' } }, async (request) => {
    const { store, clock } = services;
    const now = clock();
    const { account: cached } = userOf(request);
    const account = (await store.accounts.byId(cached.id)) ?? cached;
    const [stored, grants, dailyTokens] = await Promise.all([
      store.ledger.balance(account.id, now),
      store.ledger.liveGrants(account.id, now),
      store.usage.dayTokens(account.id, utcDay(now)),
    ]);
    // Holds of requests in flight that only this process knows of (the embedded store keeps them in memory).
    const inFlight = services.holds.heldMicros(account.id);
    const balance = {
      ...stored,
      heldMicros: stored.heldMicros + inFlight,
      availableMicros: stored.availableMicros - inFlight,
    };
    const limits = services.limitsOf(account);
    const standing = services.billingStanding(account, balance, now);
    return {
      ...presentAccount(account),
      limits: {
        requests_per_minute: limits.requestsPerMinute,
        tokens_per_minute: limits.tokensPerMinute,
        daily_tokens: limits.dailyTokens,
      },
      ...presentBalance(balance, grants),
      daily_tokens_used: dailyTokens,
      billing_status: standing.ok ? 'ok' : standing.reason,
      billing_message: standing.ok ? null : standing.message,
    };
  });
}
