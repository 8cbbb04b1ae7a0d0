import { GatewayError } from '../core/gateway-error.ts';
import {
  type ApiKeyRecord,
  type KeyBudget,
  type KeyControls,
  type LimitPeriod,
  NO_KEY_CONTROLS,
} from '../core/records.ts';
import { DAY_MS } from '../core/time.ts';
import { formatUsd, microsToUsd } from '../core/money.ts';

export const LIMIT_PERIODS: readonly LimitPeriod[] = ['daily', 'weekly', 'monthly', 'never'];
/** The first day a `never` period counts from: before every usage day. */
const BEFORE_ALL_DAYS = '0000-00-00';

/**
 * When the calendar UTC period holding `now` started (ms): the day at 00:00, the ISO week's Monday, the
 * month's first day; 0 for `never`.
 */
export function periodStartMs(period: LimitPeriod, now: number): number {
  const day = Math.floor(now / DAY_MS);
  switch (period) {
    case 'daily':
      return day * DAY_MS;
    case 'weekly':
      // Day 0 (1970-01-01) was a Thursday: (day + 3) % 7 counts days since Monday.
      return (day - ((day + 3) % 7)) * DAY_MS;
    case 'monthly': {
      const date = new Date(now);
      return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
    }
    case 'never':
      return 0;
  }
}

/** When the period holding `now` ends and the limit starts over (ms); null for `never`. */
export function periodEndMs(period: LimitPeriod, now: number): number | null {
  switch (period) {
    case 'daily':
      return periodStartMs(period, now) + DAY_MS;
    case 'weekly':
      return periodStartMs(period, now) + 7 * DAY_MS;
    case 'monthly': {
      const date = new Date(now);
      return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
    }
    case 'never':
      return null;
  }
}

/** The first usage day (`YYYY-MM-DD`) the period holding `now` counts. */
export function periodFirstDay(period: LimitPeriod, now: number): string {
  return period === 'never' ? BEFORE_ALL_DAYS : dayOf(periodStartMs(period, now));
}

export const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** What a hold of this key must fit besides the account's balance: its limit in the current period. */
export function keyBudgetOf(key: ApiKeyRecord, now: number): KeyBudget {
  const limitMicros = key.controls?.spendLimitMicros ?? null;
  if (limitMicros === null) return { keyId: key.id, limitMicros: null, fromDay: BEFORE_ALL_DAYS };
  return { keyId: key.id, limitMicros, fromDay: periodFirstDay(key.controls?.limitPeriod ?? 'never', now) };
}

/** 401 once the key's expiry has passed; the message names the expiry. */
export function refuseExpiredKey(key: ApiKeyRecord, now: number): void {
  const expiresAt = key.controls?.expiresAt ?? null;
  if (expiresAt !== null && expiresAt <= now)
    throw new GatewayError(
      'unauthorized',
      `this API key expired at ${new Date(expiresAt).toISOString()} (its expiry rule); create a new key or extend it`,
    );
}

/** The 403 for a model outside the key's allowed models, or undefined when the key may call it. */
export function modelRefusal(key: ApiKeyRecord, modelId: string): GatewayError | undefined {
  const allowed = key.controls?.allowedModels ?? null;
  if (allowed === null || allowed.includes(modelId)) return undefined;
  return new GatewayError(
    'forbidden',
    `this API key may not use model ${modelId}: its allowed models rule permits only ${allowed.join(', ')}`,
  );
}

/** USD with six decimals, for messages. */
export const dollars = (micros: number): string => `$${formatUsd(micros, 6)}`;

const PERIOD_WORDS: Record<LimitPeriod, string> = {
  daily: 'per day (UTC)',
  weekly: 'per week (UTC, from Monday)',
  monthly: 'per month (UTC)',
  never: 'in total (it never resets)',
};

/** The 402 message for a key whose spending limit has no room for a request's worst-case cost. */
export function limitRefusalMessage(
  controls: KeyControls,
  spentMicros: number,
  heldMicros: number,
  holdMicros: number,
  now: number,
): string {
  const period = controls.limitPeriod ?? 'never';
  const resets = periodEndMs(period, now);
  return (
    `this API key's spending limit of ${dollars(controls.spendLimitMicros ?? 0)} ${PERIOD_WORDS[period]} has no room for this request ` +
    `(it may cost up to ${dollars(holdMicros)}; ${dollars(spentMicros)} spent this period, ${dollars(heldMicros)} reserved by requests in flight)` +
    (resets === null ? '' : `; it resets at ${new Date(resets).toISOString()}`)
  );
}

/** A key's controls as the API shows them (USD, ISO times). */
export function presentKeyControls(controls: KeyControls | undefined): {
  limit_usd: number | null;
  limit_period: string | null;
  expires_at: string | null;
  allowed_models: string[] | null;
} {
  const c = controls ?? NO_KEY_CONTROLS;
  return {
    limit_usd: c.spendLimitMicros === null ? null : microsToUsd(c.spendLimitMicros),
    limit_period: c.limitPeriod,
    expires_at: c.expiresAt === null ? null : new Date(c.expiresAt).toISOString(),
    allowed_models: c.allowedModels,
  };
}
