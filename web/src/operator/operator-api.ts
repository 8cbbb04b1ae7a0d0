// The operator API's answers as the console reads them (the contract: /api/admin/*, see docs/operations.md).
import type { Announcement } from '../../../src/http/schemas/api.ts';

// The answers' shapes come from the server's own response schemas (src/http/schemas/api.ts).
export type {
  AccountDetail,
  AdminAccount,
  AdminAccountPage,
  Announcement,
  AuditEntry,
  AuditPage,
  DailyStats,
  DeploymentHealth,
  Grant,
  SegmentedStats,
  WebhookHealth,
} from '../../../src/http/schemas/api.ts';

export type Severity = Announcement['severity'];

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
