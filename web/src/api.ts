// The dashboard's only way to the server: same-origin JSON calls to /api with the session cookie. State-changing
// calls carry the session's CSRF token in X-CSRF-Token (the server refuses them without it).

let csrfToken = '';

/** Remembers the CSRF token of the signed-in session (from sign-in or GET /api/auth/session). */
export function setCsrfToken(token: string): void {
  csrfToken = token;
}

/** The signed-in session's CSRF token (empty when signed out). */
export const currentCsrfToken = (): string => csrfToken;

/** An error answer from the API, in the spec's error shape. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const ORGANIZATION_KEY = 'tollgate.organization';

/** The organization the dashboard acts in (chosen in the organization switcher); empty: the person's own. */
export const currentOrganization = (): string => localStorage.getItem(ORGANIZATION_KEY) ?? '';

export function setCurrentOrganization(id: string): void {
  if (id) localStorage.setItem(ORGANIZATION_KEY, id);
  else localStorage.removeItem(ORGANIZATION_KEY);
}

export async function api<T>(path: string, options: { method?: string; body?: unknown } = {}): Promise<T> {
  const method = options.method ?? 'GET';
  const headers: Record<string, string> = {};
  const organization = currentOrganization();
  if (organization) headers['x-tollgate-organization'] = organization;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
  const response = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await response.text();
  const data: unknown = text ? JSON.parse(text) : undefined;
  if (!response.ok) {
    const error = (data as { error?: { code?: string; message?: string } } | undefined)?.error;
    // The chosen organization is gone (the person left or was removed): act in the person's own again.
    if (response.status === 404 && organization && error?.message === `no organization ${organization}`) {
      setCurrentOrganization('');
      return api<T>(path, options);
    }
    throw new ApiError(response.status, error?.code ?? 'error', error?.message ?? `HTTP ${response.status}`);
  }
  return data as T;
}

// The answers' shapes come from the server's own response schemas (src/http/schemas/api.ts), the ones it
// serializes with: a field renamed or dropped there fails this app's typecheck.
export type {
  Accepted,
  Account,
  BillingAlerts,
  BillingDetails,
  AccountDetails,
  ApiKey,
  Checkout,
  DailyByModel,
  Delivery,
  Invitation,
  Invoice,
  IssuedKey,
  Member,
  Model,
  Order,
  Organization,
  Plan,
  RecentRequest,
  RecentRequests,
  Session,
  Subscription,
  SubscriptionAnswer,
  TokenKinds,
  Usage,
  UsageRow,
  WebhookEndpoint,
  WebhookEvent,
} from '../../src/http/schemas/api.ts';

export interface List<T> {
  data: T[];
}

export { date, dateTime, num, usd } from './format.ts';
export const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));
