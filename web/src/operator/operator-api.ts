// The operator API's answers as the console reads them (the contract: /api/admin/*, see docs/operations.md).
import type { Account, ApiKey, Delivery, Order } from '../api.ts';

export interface AdminAccount extends Account {
  /** Credit minus debt (left out where the server did not read it). */
  balance_usd?: number;
  role: 'user' | 'operator';
  last_active_at: string | null;
  limits_override: { rpm: number | null; tpm: number | null; daily_tokens: number | null } | null;
  credit_limit_usd: number | null;
  suspended_reason: string | null;
}

export interface Page<T> {
  data: T[];
  total: number;
  limit?: number;
  offset?: number;
}

export interface Grant {
  id: string;
  kind: string;
  amount_usd: number;
  remaining_usd: number;
  expires_at: string | null;
  created_at: string;
  source: string | null;
}

export interface AccountDetail {
  account: AdminAccount;
  credits: Grant[];
  keys: ApiKey[];
  usage: { last_30_days: { day: string; requests: number; tokens: number; cost_usd: number }[] };
  orders: Order[];
  webhook_deliveries: Delivery[];
}

export interface DailyStats {
  data: {
    day: string;
    requests: number;
    tokens: number;
    spend_usd: number;
    revenue_usd: number;
    new_accounts: number;
  }[];
  by_plan: { plan: string; day: string; requests: number; spend_usd: number }[];
  by_model: { model: string; day: string; requests: number; tokens: number; spend_usd: number }[];
}

export interface SegmentedStats {
  total_users: number;
  verified_users: number;
  active_users_7d: number;
  active_users_30d: number;
  paid_users: number;
  today_tokens: number;
  today_cost: number;
}

export interface DeploymentHealth {
  model: string;
  deployment: string;
  provider: string;
  upstream_model: string;
  circuit: 'closed' | 'open' | 'half_open';
  requests_5m: number;
  error_rate_5m: number | null;
  latency_p50_ms: number | null;
  ttft_p50_ms: number | null;
}

export interface WebhookHealth {
  backlog: { pending: number; failing: number; oldest_pending_at: string | null };
  failing_endpoints: {
    account_id: string;
    email: string;
    url: string;
    consecutive_failures: number;
    last_error: string | null;
    last_attempt_at: string | null;
    last_delivery_id?: string | null;
  }[];
}

export type Severity = 'info' | 'minor' | 'major' | 'critical';

export interface Announcement {
  id: string;
  title: string;
  body: string;
  severity: Severity;
  models: string[];
  starts_at: string;
  ends_at: string | null;
  breaking: boolean;
  effective_at: string | null;
  created_at: string;
  updated_at: string;
  created_by: string;
}

export interface AuditEntry {
  id: string;
  at: string;
  actor: string;
  action: string;
  account_id: string | null;
  details: unknown;
  ip: string | null;
}

/** A query string from the parameters that are set (empty strings are left out). */
export function query(params: Record<string, string | number>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== '') search.set(name, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
}

/** A `datetime-local` value (UTC wall time) as an ISO instant, or undefined when empty. */
export function fromLocalInput(value: string): string | undefined {
  return value ? new Date(`${value}:00Z`).toISOString() : undefined;
}

/** An ISO instant as a `datetime-local` value in UTC. */
export function toLocalInput(iso: string | null): string {
  return iso ? iso.slice(0, 16) : '';
}

/** A fraction as a percentage with one decimal, or a dash when unknown. */
export const percent = (fraction: number | null): string =>
  fraction === null ? '—' : `${(fraction * 100).toFixed(1)}%`;

/** Milliseconds, or a dash when unknown. */
export const ms = (value: number | null): string => (value === null ? '—' : `${Math.round(value)} ms`);
