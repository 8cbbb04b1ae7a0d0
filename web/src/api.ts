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

export async function api<T>(path: string, options: { method?: string; body?: unknown } = {}): Promise<T> {
  const method = options.method ?? 'GET';
  const headers: Record<string, string> = {};
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
    throw new ApiError(response.status, error?.code ?? 'error', error?.message ?? `HTTP ${response.status}`);
  }
  return data as T;
}

export interface Account {
  id: string;
  email: string;
  email_verified: boolean;
  status: string;
  plan: string;
  plan_expires_at: string | null;
  created_at: string;
}

export interface Session {
  account: Account;
  csrf_token: string;
  expires_at: string;
  /** True for an operator account: the app shows the operator console. */
  operator?: boolean;
}

export interface AccountDetails extends Account {
  limits: {
    requests_per_minute: number | null;
    tokens_per_minute: number | null;
    daily_tokens: number | null;
  };
  balance_usd: number;
  held_usd: number;
  available_usd: number;
  credits: { id: string; kind: string; amount_usd: number; remaining_usd: number; expires_at: string }[];
  daily_tokens_used: number;
  billing_status: string;
  billing_message: string | null;
}

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  status: 'active' | 'revoked';
  allowed_ips: string[] | null;
  created_at: string;
  revoked_at: string | null;
  /** When the key last made a request (null: never). */
  last_used_at?: string | null;
  /** Per-key controls (null: no such rule). */
  limit_usd: number | null;
  limit_period: 'daily' | 'weekly' | 'monthly' | 'never' | null;
  expires_at: string | null;
  allowed_models: string[] | null;
  /** A limited active key's spend this period and what remains (null otherwise). */
  spent_this_period_usd?: number | null;
  remaining_usd?: number | null;
  resets_at?: string | null;
}

export interface IssuedKey {
  id: string;
  name: string;
  prefix: string;
  key: string;
  allowed_ips: string[] | null;
  created_at: string;
}

export interface UsageRow extends TokenKinds {
  day?: string;
  model?: string;
  key_id?: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost_usd: number;
}

/** The kinds of a usage row's tokens: of the prompt, cache reads and writes; of the completion, reasoning. */
export interface TokenKinds {
  input_tokens?: number;
  cached_input_tokens?: number;
  cache_write_tokens?: number;
  cache_write_1h_tokens?: number;
  reasoning_tokens?: number;
}

export interface Usage {
  from: string;
  to: string;
  group_by: 'day' | 'model' | 'key';
  data: UsageRow[];
  total: UsageRow;
}

export interface RecentRequest extends TokenKinds {
  request_id: string;
  key_id: string;
  model: string;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost_usd: number;
  status: string;
  latency_ms: number;
  created_at: string;
}

export interface Plan {
  id: string;
  name: string;
  requests_per_minute: number | null;
  tokens_per_minute: number | null;
  daily_tokens: number | null;
  monthly_price_usd: number;
  monthly_allowance_usd: number;
  purchasable: boolean;
}

export interface Order {
  order_id: string;
  kind: string;
  plan: string | null;
  status: string;
  reason: string | null;
  amount: number;
  currency: string;
  provider: string;
  created_at: string;
  completed_at: string | null;
}

export interface WebhookEndpoint {
  url: string;
  secret: string;
  created_at?: string;
}

export interface Delivery {
  id: string;
  event_id: string;
  attempt: number;
  url: string;
  status_code: number | null;
  error: string | null;
  latency_ms: number | null;
  created_at: string;
}

export interface WebhookEvent {
  id: string;
  event_type: string;
  status: string;
  attempts: number;
  last_status_code: number | null;
  next_attempt_at: string | null;
  created_at: string;
  finished_at: string | null;
}

export interface Model {
  id: string;
  description?: string;
  pricing: {
    input_usd_per_million: number;
    output_usd_per_million: number;
    cached_input_usd_per_million?: number;
    cache_write_usd_per_million?: number;
  };
}

export interface List<T> {
  data: T[];
}

export { date, dateTime, num, usd } from './format.ts';
export const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));
