import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Operators } from '../operators/create-operators.ts';
import { SAFE_METHODS } from './session-cookie.ts';

/** Who did it: the operator's e-mail and account, or the admin key. */
export function actorOf(request: FastifyRequest): { actor: string; actorAccountId: string | null } {
  const account =
    request.sessionUser?.account ??
    (request.principal?.kind === 'user' ? request.principal.account : undefined);
  return account
    ? { actor: account.email, actorAccountId: account.id }
    : { actor: 'admin-key', actorAccountId: null };
}

/** Each operator write route's action name in the audit log; a route missing here is logged by method and path. */
const ACTIONS: Readonly<Record<string, string>> = {
  'POST /api/admin/accounts/:id/suspend': 'account.suspend',
  'POST /api/admin/accounts/:id/unsuspend': 'account.unsuspend',
  'PUT /api/admin/accounts/:id/plan': 'account.set_plan',
  'PUT /api/admin/accounts/:id/limits': 'account.set_limits',
  'POST /api/admin/accounts/:id/credits': 'account.grant_credit',
  'POST /api/admin/accounts/:id/resend-verification': 'account.resend_verification',
  'DELETE /api/admin/accounts/:id/keys/:keyId': 'key.revoke',
  'POST /api/admin/operators': 'operator.grant',
  'DELETE /api/admin/operators/:id': 'operator.revoke',
  'POST /api/admin/announcements': 'announcement.create',
  'PATCH /api/admin/announcements/:id': 'announcement.update',
  'POST /api/admin/announcements/:id/end': 'announcement.end',
  'POST /api/admin/webhooks/deliveries/:id/redeliver': 'webhook.redeliver',
};

/** What a handler adds to its audit row: the account acted on (when the path does not name it), details. */
const notes = new WeakMap<FastifyRequest, { accountId?: string; details?: Record<string, unknown> }>();

/** Tells the audit row of this request which account it was about and what else to keep. */
export function noteAudit(
  request: FastifyRequest,
  note: { accountId?: string; details?: Record<string, unknown> },
): void {
  notes.set(request, { ...notes.get(request), ...note });
}

/** Details are kept small: the body's fields, each value cut to 500 characters. */
function detailsOf(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return {};
  return Object.fromEntries(
    Object.entries(body as Record<string, unknown>).map(([key, value]) => {
      const text = typeof value === 'string' ? value : JSON.stringify(value);
      return [key, text.length > 500 ? `${text.slice(0, 500)}…` : value];
    }),
  );
}

/**
 * Writes an audit row for every operator write that succeeded (routes declared `auth: 'admin'`, any method
 * but GET/HEAD/OPTIONS, status below 400), before its answer is sent: who, what, on which account, when and
 * from which address. The row is appended to a table the store never updates.
 */
export function installOperatorAudit(app: FastifyInstance, operators: Operators): void {
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.routeOptions.config.auth !== 'admin' || SAFE_METHODS.has(request.method)) return payload;
    if (reply.statusCode >= 400) return payload;
    const route = `${request.method} ${request.routeOptions.url ?? request.url}`;
    const note = notes.get(request);
    const params = request.params as Record<string, string | undefined>;
    const pathAccount = /^\/api\/admin\/(accounts|operators)\/:id/.test(request.routeOptions.url ?? '')
      ? params['id']
      : undefined;
    await operators.audit({
      ...actorOf(request),
      action: ACTIONS[route] ?? route,
      accountId: note?.accountId ?? pathAccount ?? null,
      details: { ...detailsOf(request.body), ...params, ...note?.details },
      ip: request.ip,
    });
    return payload;
  });
}
