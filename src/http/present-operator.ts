import type { StatusDocument } from '../operators/status-snapshot.ts';
import type { Announcement } from '../store/announcements-repo.ts';
import type { AuditEntry } from '../store/audit-repo.ts';
import type { AccountRecord } from '../core/records.ts';
import { iso, presentAccount, usd } from './present.ts';

/** An account as operators see it; `balanceMicros` (credit minus debt) where the route read it. */
export function presentAdminAccount(account: AccountRecord, balanceMicros?: number): Record<string, unknown> {
  return {
    ...presentAccount(account),
    ...(balanceMicros === undefined ? {} : { balance_usd: usd(balanceMicros) }),
    role: account.role ?? 'user',
    limits_override: { rpm: account.rpmLimit, tpm: account.tpmLimit, daily_tokens: account.dailyTokenLimit },
    credit_limit_usd: usd(account.creditLimitMicros),
    last_active_at: iso(account.lastActiveAt),
    suspended_reason: account.suspendedReason ?? null,
  };
}

export function presentAnnouncement(a: Announcement): Record<string, unknown> {
  return {
    id: a.id,
    title: a.title,
    body: a.body,
    severity: a.severity,
    models: a.models,
    starts_at: iso(a.startsAt),
    ends_at: iso(a.endsAt),
    breaking: a.breaking,
    effective_at: iso(a.effectiveAt),
    created_at: iso(a.createdAt),
    updated_at: iso(a.updatedAt),
    created_by: a.createdBy,
  };
}

export function presentAuditEntry(entry: AuditEntry): Record<string, unknown> {
  return {
    id: entry.id,
    at: iso(entry.at),
    actor: entry.actor,
    action: entry.action,
    account_id: entry.accountId,
    details: entry.details,
    ip: entry.ip,
  };
}

/** `/status.json`: the snapshot in the contract's shape (docs/operations.md). */
export function presentStatus(status: StatusDocument): Record<string, unknown> {
  return {
    updated_at: iso(status.updatedAt),
    models: status.models.map((model) => ({
      id: model.id,
      state: model.state,
      availability_90d: model.availability,
      uptime_90d: model.uptime,
    })),
    incidents: status.incidents.map(presentAnnouncement),
    announcements: status.announcements.map(presentAnnouncement),
    breaking_changes: status.breakingChanges.map(presentAnnouncement),
  };
}
