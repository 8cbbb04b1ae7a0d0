import { z } from 'zod';
import { mapping, text, usdAsMicros, wholeNumber } from './schema-primitives.ts';
import { MICROS_PER_USD } from './money.ts';

/**
 * A plan, defined once: each field's YAML key and schema are here, and the plan type, the `plans:` schema of
 * the configuration file, how a file's entry overrides a default, and the defaults themselves all follow from
 * this table. A new plan field is one line here plus its default in each plan below.
 */

/** A plan's limit: a whole number, or null / `unlimited`. */
const LIMIT = z.preprocess((value) => (value === 'unlimited' ? null : value), wholeNumber().nullable());

/** A multiplier on the model's list prices (`1.2`), held as integer basis points (12,000) so money stays exact. */
const MULTIPLIER = z
  .number({ error: 'must be a non-negative number (a multiplier such as 1.2)' })
  .min(0, { error: 'must be a non-negative number (a multiplier such as 1.2)' })
  .transform((value) => Math.round(value * 10_000));

/** USD as µUSD, or null / `unlimited` for no cap. */
const USD_OR_UNLIMITED = z.preprocess(
  (value) => (value === 'unlimited' ? null : value),
  usdAsMicros().nullable(),
);

const PLAN_FIELDS = {
  name: { key: 'name', schema: text() },
  /** null means unlimited. */
  requestsPerMinute: { key: 'requests_per_minute', schema: LIMIT },
  tokensPerMinute: { key: 'tokens_per_minute', schema: LIMIT },
  dailyTokens: { key: 'daily_tokens', schema: LIMIT },
  monthlyPriceMicros: { key: 'monthly_price_usd', schema: usdAsMicros() },
  /**
   * The included quota: credit granted with each paid period, expiring at the period's end, spent at the
   * models' list prices.
   */
  monthlyAllowanceMicros: { key: 'monthly_allowance_usd', schema: usdAsMicros() },
  purchasable: { key: 'purchasable', schema: z.boolean({ error: 'must be true or false' }) },
  /** Active API keys an account on this plan may hold; null means unlimited. */
  maxActiveKeys: { key: 'max_keys', schema: LIMIT },
  /**
   * The plan's per-million overage rate, as a multiplier on each model's per-million list prices (basis
   * points: 10,000 is the list price). 0 means the plan has no overage: it stops at its quota.
   */
  overageBasisPoints: { key: 'overage_price_multiplier', schema: MULTIPLIER },
  /** The overage an account may accrue in one period unless it sets its own cap; null means no cap. */
  defaultOverageCapMicros: { key: 'overage_cap_usd', schema: USD_OR_UNLIMITED },
} as const satisfies Record<string, { key: string; schema: z.ZodType }>;

type Fields = typeof PLAN_FIELDS;
type FieldName = keyof Fields;

/** A plan as the configuration holds it (µUSD amounts, null for unlimited). */
/** The plans the spec names. */
export type PlanId = 'free_trial' | 'starter' | 'pro' | 'enterprise';

export type PlanConfig = { id: PlanId } & { [Name in FieldName]: z.output<Fields[Name]['schema']> };

/** One `plans:` entry of the configuration file: every key optional, an unknown key an error. */
export type PlanFileEntry = { [Name in FieldName as Fields[Name]['key']]?: z.output<Fields[Name]['schema']> };

export const PLAN_FILE_ENTRY = mapping(
  Object.fromEntries(Object.values(PLAN_FIELDS).map((field) => [field.key, field.schema.optional()])),
) as unknown as z.ZodType<PlanFileEntry, unknown>;

/** The plan with the file's entry over it: a key given (null included, for unlimited) replaces the default. */
export function overridePlan(base: PlanConfig, entry: PlanFileEntry): PlanConfig {
  const plan: Record<string, unknown> = { ...base };
  const given = entry as Record<string, unknown>;
  for (const [name, field] of Object.entries(PLAN_FIELDS)) {
    if (given[field.key] !== undefined) plan[name] = given[field.key];
  }
  return plan as PlanConfig;
}

const USD = MICROS_PER_USD;

/**
 * The spec's four plans with its limits; prices, included quotas, overage rates and caps are Tollgate's
 * defaults (docs/decisions.md).
 */
export const DEFAULT_PLANS: ReadonlyMap<PlanId, PlanConfig> = new Map<PlanId, PlanConfig>(
  (
    [
      {
        id: 'free_trial',
        name: 'Free Trial',
        requestsPerMinute: 10,
        tokensPerMinute: 50_000,
        dailyTokens: 500_000,
        monthlyPriceMicros: 0,
        monthlyAllowanceMicros: 0,
        purchasable: false,
        maxActiveKeys: 3,
        overageBasisPoints: 0,
        defaultOverageCapMicros: 0,
      },
      {
        id: 'starter',
        name: 'Starter',
        requestsPerMinute: 60,
        tokensPerMinute: 300_000,
        dailyTokens: 5_000_000,
        monthlyPriceMicros: 20 * USD,
        monthlyAllowanceMicros: 20 * USD,
        purchasable: true,
        maxActiveKeys: 10,
        overageBasisPoints: 12_000,
        defaultOverageCapMicros: 50 * USD,
      },
      {
        id: 'pro',
        name: 'Pro',
        requestsPerMinute: 300,
        tokensPerMinute: 1_500_000,
        dailyTokens: 25_000_000,
        monthlyPriceMicros: 100 * USD,
        monthlyAllowanceMicros: 100 * USD,
        purchasable: true,
        maxActiveKeys: 25,
        overageBasisPoints: 11_000,
        defaultOverageCapMicros: 250 * USD,
      },
      {
        id: 'enterprise',
        name: 'Enterprise',
        requestsPerMinute: null,
        tokensPerMinute: null,
        dailyTokens: null,
        monthlyPriceMicros: 0,
        monthlyAllowanceMicros: 0,
        purchasable: false,
        maxActiveKeys: null,
        overageBasisPoints: 10_000,
        defaultOverageCapMicros: null,
      },
    ] satisfies PlanConfig[]
  ).map((plan) => [plan.id, plan]),
);
