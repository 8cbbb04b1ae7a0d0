import { DAY_MS } from './time.ts';

/** A limit of null is unlimited. */
export interface LimitSet {
  requestsPerMinute: number | null;
  tokensPerMinute: number | null;
  dailyTokens: number | null;
}

export interface AdmissionRequest {
  /** Whose limits: an API key id (or `ip:<address>` for sign-up protection). */
  subject: string;
  /** Unique per request; reconcile refers to it. */
  requestId: string;
  limits: LimitSet;
  /** Tokens to take now: estimated prompt plus max_tokens. */
  tokens: number;
  now: number;
}

export interface LimitState {
  limit: number;
  remaining: number;
  /**
   * Until the oldest usage in the window ages out, the next moment `remaining` grows (0 with an empty
   * window). A sliding window is empty a full window after its newest entry, which right after an admission
   * is always the window itself; this says when room actually frees.
   */
  resetMs: number;
}

/**
 * The state of each limited dimension after an admission (or as it stands, for a refusal); an unlimited one is
 * absent. The HTTP layer writes it as the x-ratelimit-* headers.
 */
export interface RateLimits {
  requests?: LimitState;
  tokens?: LimitState;
}

export interface Admission extends RateLimits {
  allowed: boolean;
  /** Which limit refused it. */
  reason?: 'requests' | 'tokens' | 'daily' | 'unavailable';
  /** When a retry will succeed, if nothing else is taken meanwhile. */
  retryAfterMs?: number;
}

/**
 * Per-subject admission: requests/min, tokens/min and tokens per UTC day are checked and taken together,
 * atomically, over exact sliding windows; a refused request takes nothing.
 */
export interface Limiter {
  admit(request: AdmissionRequest): Promise<Admission>;
  /**
   * The same admission without a promise, for a limiter that needs no I/O (memory): the request path calls it
   * when present, so a request's admission and its credit hold run in one synchronous step.
   */
  admitNow?(request: AdmissionRequest): Admission;
  /** Replaces the tokens a request reserved with what it actually used (its request still counts). */
  reconcile(
    subject: string,
    requestId: string,
    reservedTokens: number,
    actualTokens: number,
    now: number,
  ): Promise<void>;
  /** `reconcile` without a promise, for a limiter that needs no I/O (memory). */
  reconcileNow?(
    subject: string,
    requestId: string,
    reservedTokens: number,
    actualTokens: number,
    now: number,
  ): void;
  /** Gives back everything a request took (it was refused later, e.g. for want of credit). */
  release(subject: string, requestId: string, tokens: number, now: number): Promise<void>;
  /**
   * Limiters that forget on restart (memory) take the day's tokens already recorded in the store, once per
   * subject and day, so that a restart cannot reopen a daily cap. Shared limiters (Redis) do not need it.
   */
  seedDaily?(subject: string, tokens: number, now: number): void;
  /** Tokens the subject has taken on the UTC day of `now`. */
  dailyTokens(subject: string, now: number): Promise<number>;
  /** Whether the shared backend is reachable (always true in memory). */
  healthy(): boolean;
  readonly backend: string;
  close(): Promise<void>;
}

/** A subject's tokens on the UTC day of `now`, as the ledger recorded them. */
export type DailySource = (subject: string, now: number) => Promise<number>;

/** Why an admission could not use the shared store. */
export type LimiterFailure = 'unreachable' | 'script';

/** A limiter whose counts live outside the process (Redis), shared by every instance. */
export interface SharedLimiter extends Limiter {
  /**
   * Where a daily cap's count comes from when the shared store lost the day (it restarted empty, failed over)
   * or while admissions fall back to local counting.
   */
  useDailySource(source: DailySource): void;
  /** Called on each admission that could not use the shared store, by kind of failure. */
  onFailure(listener: (kind: LimiterFailure) => void): void;
  /** Loads what the first admission would otherwise load (Redis: its scripts). */
  warm(): Promise<void>;
}

/** The shared side of a limiter, when it has one. */
export function sharedLimiterOf(limiter: Limiter): SharedLimiter | undefined {
  return 'useDailySource' in limiter ? (limiter as SharedLimiter) : undefined;
}

export const WINDOW_MS = 60_000;

/** A dimension's state from its limit, its usage in the window and when its oldest entry was taken. */
export function limitState(
  limit: number,
  used: number,
  oldestAt: number | undefined,
  now: number,
): LimitState {
  return {
    limit,
    remaining: Math.max(0, limit - used),
    resetMs: oldestAt === undefined ? 0 : Math.max(0, oldestAt + WINDOW_MS - now),
  };
}

/** Milliseconds from `now` to the next UTC midnight. */
export const msUntilUtcMidnight = (now: number): number => DAY_MS - (now % DAY_MS);
export const utcDayNumber = (now: number): number => Math.floor(now / DAY_MS);
