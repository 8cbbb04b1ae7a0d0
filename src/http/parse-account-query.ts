import type { Config, PlanId } from '../core/config.ts';
import { GatewayError } from '../core/gateway-error.ts';
import type { AccountQuery, AccountSort } from '../store/admin-accounts-repo.ts';

/** The accounts list's query string (already checked by its schema) as a query; an unknown plan is a 400. */
export function parseAccountQuery(query: Record<string, string | undefined>, config: Config): AccountQuery {
  const plan = query['plan'];
  if (plan !== undefined && !config.plans.has(plan as PlanId))
    throw new GatewayError('invalid_request', `plan must be one of ${[...config.plans.keys()].join(', ')}`, {
      param: 'plan',
    });
  const search = query['search']?.trim();
  return {
    ...(search ? { search } : {}),
    ...(plan !== undefined ? { plan: plan as PlanId } : {}),
    ...(query['status'] !== undefined ? { status: query['status'] as 'active' | 'suspended' } : {}),
    sort: (query['sort'] ?? 'created_at') as AccountSort,
    order: query['order'] === 'asc' ? 'asc' : 'desc',
    limit: Number(query['limit'] ?? 50),
    offset: Number(query['offset'] ?? 0),
  };
}
