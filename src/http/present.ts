import { presentKeyControls } from '../accounts/key-controls.ts';
import type { PlanConfig, ModelConfig } from '../core/config.ts';
import type { Balance as LedgerBalance } from '../store/ledger-repo.ts';
import type { AccountRecord, ApiKeyRecord, CreditGrant, WebhookDelivery } from '../core/records.ts';
import { microsToUsd } from '../core/money.ts';
import type { Account, Balance, Delivery, KeyView, Model, Plan } from './schemas/api.ts';

/** Integer micro-USD as a USD number for JSON (display only; the ledger never holds floats). */
export const usd = microsToUsd;
export function iso(ms: number): string;
export function iso(ms: number | null): string | null;
export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

export function presentKey(key: ApiKeyRecord): KeyView {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    status: key.status,
    allowed_ips: key.allowedIps,
    created_at: iso(key.createdAt),
    revoked_at: iso(key.revokedAt),
    ...presentKeyControls(key.controls),
  };
}

export function presentAccount(account: AccountRecord): Account {
  return {
    id: account.id,
    email: account.email,
    email_verified: account.emailVerified,
    status: account.status,
    plan: account.plan,
    plan_expires_at: iso(account.planExpiresAt),
    created_at: iso(account.createdAt),
  };
}

export function presentBalance(balance: LedgerBalance, grants: readonly CreditGrant[]): Balance {
  return {
    balance_usd: usd(balance.creditMicros - balance.debtMicros),
    held_usd: usd(balance.heldMicros),
    available_usd: usd(Math.max(0, balance.availableMicros)),
    credits: grants
      .filter((grant) => grant.remainingMicros > 0)
      .map((grant) => ({
        id: grant.id,
        kind: grant.kind,
        amount_usd: usd(grant.amountMicros),
        remaining_usd: usd(grant.remainingMicros),
        expires_at: iso(grant.expiresAt),
      })),
  };
}

export function presentPlan(plan: PlanConfig): Plan {
  return {
    id: plan.id,
    name: plan.name,
    requests_per_minute: plan.requestsPerMinute,
    tokens_per_minute: plan.tokensPerMinute,
    daily_tokens: plan.dailyTokens,
    monthly_price_usd: usd(plan.monthlyPriceMicros),
    monthly_allowance_usd: usd(plan.monthlyAllowanceMicros),
    included_quota_usd: usd(plan.monthlyAllowanceMicros),
    overage_price_multiplier: plan.overageBasisPoints / 10_000,
    overage_cap_usd: plan.defaultOverageCapMicros === null ? null : usd(plan.defaultOverageCapMicros),
    purchasable: plan.purchasable,
  };
}

export function presentModel(model: ModelConfig, created: number): Model {
  return {
    id: model.id,
    object: 'model',
    created,
    owned_by: 'tollgate',
    description: model.description,
    context_window: model.contextWindow,
    max_output_tokens: model.maxOutputTokens,
    pricing: {
      input_usd_per_million: usd(model.inputMicrosPerMillion),
      output_usd_per_million: usd(model.outputMicrosPerMillion),
      cached_input_usd_per_million: usd(model.cachedInputMicrosPerMillion),
      cache_write_usd_per_million: usd(model.cacheWriteMicrosPerMillion),
      cache_write_1h_usd_per_million: usd(model.cacheWrite1hMicrosPerMillion),
    },
  };
}

/** One webhook delivery attempt, as the account's and the operators' pages list it. */
export function presentDelivery(d: WebhookDelivery): Delivery {
  return {
    id: d.id,
    event_id: d.eventId,
    attempt: d.attempt,
    url: d.url,
    status_code: d.statusCode,
    error: d.error,
    latency_ms: d.latencyMs,
    created_at: iso(d.createdAt),
  };
}
