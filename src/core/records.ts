import type { PlanId } from './config.ts';

export type AccountStatus = 'active' | 'suspended';

/** An operator's session or key passes the operator routes; absent means 'user'. */
export type AccountRole = 'user' | 'operator';

export interface AccountRecord {
  id: string;
  email: string;
  passwordHash: string;
  emailVerified: boolean;
  status: AccountStatus;
  plan: PlanId;
  /** End of the paid period; null on the trial and on Enterprise. */
  planExpiresAt: number | null;
  /** Operator overrides of the plan's limits; null keeps the plan's. */
  rpmLimit: number | null;
  tpmLimit: number | null;
  dailyTokenLimit: number | null;
  /** How far below zero a postpaid (Enterprise) account may go. */
  creditLimitMicros: number;
  /** What a postpaid account owes beyond its credit. */
  debtMicros: number;
  heldMicros: number;
  createdAt: number;
  lastActiveAt: number | null;
  /** Absent on records built before roles existed: a user. */
  role?: AccountRole;
  /** Why an operator suspended the account, when a reason was given. */
  suspendedReason?: string | null;
  /** The organization's display name; null or absent: its e-mail. */
  orgName?: string | null;
}

/** A new account as registration makes it: active, unverified, on the Free Trial, no overrides. */
export function newAccountRecord(
  id: string,
  email: string,
  passwordHash: string,
  createdAt: number,
): AccountRecord {
  return {
    id,
    email,
    passwordHash,
    emailVerified: false,
    status: 'active',
    plan: 'free_trial',
    planExpiresAt: null,
    rpmLimit: null,
    tpmLimit: null,
    dailyTokenLimit: null,
    creditLimitMicros: 0,
    debtMicros: 0,
    heldMicros: 0,
    createdAt,
    lastActiveAt: null,
  };
}

export interface ApiKeyRecord {
  id: string;
  accountId: string;
  name: string;
  prefix: string;
  secretHash: string;
  /** CIDR blocks the key may be used from; null means anywhere. */
  allowedIps: string[] | null;
  status: 'active' | 'revoked';
  createdAt: number;
  revokedAt: number | null;
  /** Per-key controls; absent or null means none. */
  controls?: KeyControls;
  /**
   * Whose rate-limit windows the key uses, when not its own: the revoked key whose windows it took over at
   * creation (see limitSubjectOf).
   */
  limitSubject?: string;
  /** The organization member the key belongs to, whose limit and allowed models it also obeys. */
  memberId?: string | null;
  /** That member's role and controls, read with the key (absent: the key is the owner's, unrestricted). */
  member?: KeyMember;
}

/** The roles of an organization's members, from most to least rights. */
export const MEMBER_ROLES = ['owner', 'admin', 'billing', 'developer', 'viewer'] as const;
export type MemberRole = (typeof MEMBER_ROLES)[number];

/** What a member's keys carry of it: its role and its own controls. */
export interface KeyMember {
  id: string;
  role: MemberRole;
  /** What all the member's keys together may spend per period (µUSD); null: no limit. */
  spendLimitMicros: number | null;
  limitPeriod: LimitPeriod | null;
  /** The public model ids the member's keys may call; null: every model. */
  allowedModels: string[] | null;
}

/** A person's place in an organization (an account): the sign-in, the role and the member's controls. */
export interface MemberRecord extends KeyMember {
  organizationId: string;
  personId: string;
  createdAt: number;
}

export interface InvitationRecord {
  id: string;
  organizationId: string;
  email: string;
  role: MemberRole;
  invitedBy: string;
  createdAt: number;
  expiresAt: number;
  acceptedAt: number | null;
  revokedAt: number | null;
}

/** The subject of a key's rate-limit windows: the revoked key's it took over, else its own id. */
export const limitSubjectOf = (key: ApiKeyRecord): string => key.limitSubject ?? key.id;

/** How often a key's spending limit starts over: calendar UTC periods, or never. */
export type LimitPeriod = 'daily' | 'weekly' | 'monthly' | 'never';

/** A key's own spending limit, expiry and allowed models; null in each means no such rule. */
export interface KeyControls {
  /** What the key may spend per period, in µUSD. */
  spendLimitMicros: number | null;
  /** The limit's period; set whenever the limit is. */
  limitPeriod: LimitPeriod | null;
  /** When the key stops working (ms since the epoch). */
  expiresAt: number | null;
  /** The public model ids the key may call. */
  allowedModels: string[] | null;
}

/**
 * What a hold of one key must also fit: the key's limit less its spend since `fromDay` (a `YYYY-MM-DD` UTC
 * day, the start of its period) and its outstanding holds. A null limit checks nothing but records the key.
 */
export interface KeyBudget {
  keyId: string;
  limitMicros: number | null;
  fromDay: string;
  /** The key's organization member's limit, across all the member's keys, when it has one. */
  member?: MemberBudget;
}

/** What a hold must also fit for the key's member: its limit less all its keys' spend since `fromDay` and holds. */
export interface MemberBudget {
  memberId: string;
  limitMicros: number;
  fromDay: string;
}

/** A key with no controls. */
export const NO_KEY_CONTROLS: KeyControls = Object.freeze({
  spendLimitMicros: null,
  limitPeriod: null,
  expiresAt: null,
  allowedModels: null,
});

export type GrantKind = 'trial' | 'plan' | 'topup' | 'admin';

export interface CreditGrant {
  id: string;
  accountId: string;
  kind: GrantKind;
  amountMicros: number;
  remainingMicros: number;
  expiresAt: number;
  createdAt: number;
  source: string | null;
}

export type UsageStatus = 'ok' | 'error' | 'cancelled';

/** What a finished request owes, and what to record of it: counts and money, never content. */
export interface Settlement {
  requestId: string;
  accountId: string;
  keyId: string;
  model: string;
  deployment: string | null;
  /** Every prompt token, cached and cache-written ones included. */
  promptTokens: number;
  /** Every generated token, reasoning included. */
  completionTokens: number;
  /** Of the prompt: read from the upstream's cache (0 when absent). */
  cachedInputTokens?: number;
  /** Of the prompt: written to the upstream's cache, any lifetime. */
  cacheWriteTokens?: number;
  /** Of those writes: to a cache of an hour. */
  cacheWrite1hTokens?: number;
  /** Of the completion: hidden reasoning. */
  reasoningTokens?: number;
  estimated: boolean;
  costMicros: number;
  status: UsageStatus;
  latencyMs: number;
  ttftMs: number | null;
  createdAt: number;
}

export interface OrderRecord {
  id: string;
  accountId: string;
  kind: 'plan' | 'topup';
  plan: PlanId | null;
  amountMicros: number;
  currency: string;
  status: 'pending' | 'paid' | 'failed';
  reason: string | null;
  provider: string;
  providerRef: string | null;
  createdAt: number;
  completedAt: number | null;
}

export interface WebhookEndpoint {
  accountId: string;
  url: string;
  secret: string;
  createdAt: number;
}

export interface WebhookEvent {
  id: string;
  accountId: string;
  eventType: string;
  payload: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  nextAttemptAt: number;
  createdAt: number;
  finishedAt: number | null;
}

export interface WebhookDelivery {
  id: string;
  eventId: string;
  accountId: string;
  attempt: number;
  url: string;
  statusCode: number | null;
  error: string | null;
  latencyMs: number;
  createdAt: number;
}
