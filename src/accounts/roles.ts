import { GatewayError } from '../core/gateway-error.ts';
import type { MemberRole } from '../core/records.ts';

/** What a request to an organization's /api route does, as the role table grants it. */
export type Action =
  /** Read the organization: summary, keys, usage, orders, members. */
  | 'read'
  /** Create, change, rotate and revoke one's own keys (every key with 'keys.all'). */
  | 'keys'
  /** Change and revoke other members' keys. */
  | 'keys.all'
  /** Use the dashboard's playground. */
  | 'playground'
  /** Invite, remove, change roles and per-member limits. */
  | 'members'
  /** The organization's settings: its name, its webhook endpoint and signing secret. */
  | 'settings'
  /** Plans, payments, invoices and alerts. */
  | 'billing'
  /** Make another member owner, or take the owner role away. */
  | 'ownership';

/** The role × action table: what each role may do. Every organization route is checked against it. */
export const ROLE_RIGHTS: Readonly<Record<MemberRole, ReadonlySet<Action>>> = {
  owner: new Set<Action>([
    'read',
    'keys',
    'keys.all',
    'playground',
    'members',
    'settings',
    'billing',
    'ownership',
  ]),
  admin: new Set<Action>(['read', 'keys', 'keys.all', 'playground', 'members', 'settings']),
  billing: new Set<Action>(['read', 'billing']),
  developer: new Set<Action>(['read', 'keys', 'playground']),
  viewer: new Set<Action>(['read']),
};

/**
 * Each /api route that acts in an organization, by method and path pattern, and the action it needs. A route
 * missing here needs 'read' for GET and 'settings' for anything else, so a new route is never open to more
 * roles than intended.
 */
export const ROUTE_ACTIONS: Readonly<Record<string, Action>> = {
  'GET /api/account': 'read',
  'GET /api/key': 'read',
  'GET /api/keys': 'read',
  'POST /api/keys': 'keys',
  'PATCH /api/keys/:id': 'keys',
  'DELETE /api/keys/:id': 'keys',
  'POST /api/keys/:id/rotate': 'keys',
  'GET /api/usage': 'read',
  'GET /api/usage/recent': 'read',
  'GET /api/usage/daily-by-model': 'read',
  'GET /api/stats': 'read',
  'POST /api/billing/checkout': 'billing',
  'GET /api/billing/orders': 'read',
  'PUT /api/webhooks/endpoint': 'settings',
  'GET /api/webhooks/endpoint': 'settings',
  'DELETE /api/webhooks/endpoint': 'settings',
  'POST /api/webhooks/endpoint/rotate-secret': 'settings',
  'POST /api/webhooks/test': 'settings',
  'GET /api/webhooks/events': 'read',
  'GET /api/webhooks/deliveries': 'read',
  'POST /api/webhooks/deliveries/:id/redeliver': 'settings',
  'POST /api/auth/resend-verification': 'read',
  'POST /api/playground/chat/completions': 'playground',
  'GET /api/organizations': 'read',
  // Anyone may start an organization of their own, and leave one (removing others needs 'members').
  'POST /api/organizations': 'read',
  'GET /api/organizations/:id': 'read',
  'PATCH /api/organizations/:id': 'settings',
  'GET /api/organizations/:id/members': 'read',
  'PATCH /api/organizations/:id/members/:member_id': 'members',
  'DELETE /api/organizations/:id/members/:member_id': 'read',
  'GET /api/organizations/:id/invitations': 'members',
  'POST /api/organizations/:id/invitations': 'members',
  'DELETE /api/organizations/:id/invitations/:invitation_id': 'members',
};

/** The action a route needs (see ROUTE_ACTIONS). */
export function actionOf(method: string, url: string): Action {
  return ROUTE_ACTIONS[`${method} ${url}`] ?? (method === 'GET' || method === 'HEAD' ? 'read' : 'settings');
}

export const mayDo = (role: MemberRole, action: Action): boolean => ROLE_RIGHTS[role].has(action);

/** 403 naming the role and the right it lacks, unless the role has it. */
export function refuseUnlessAllowed(role: MemberRole, action: Action): void {
  if (!mayDo(role, action))
    throw new GatewayError(
      'forbidden',
      `your role in this organization (${role}) does not allow ${ACTION_NAMES[action]}`,
    );
}

const ACTION_NAMES: Readonly<Record<Action, string>> = {
  read: 'reading it',
  keys: 'managing API keys',
  'keys.all': "managing other members' API keys",
  playground: 'using the playground',
  members: 'managing members',
  settings: 'changing its settings',
  billing: 'billing (plans, payments, invoices)',
  ownership: 'changing ownership',
};
