import { z } from 'zod';
import type { Env } from '../providers/provider-plugin.ts';
import { PROVIDER_TYPES, providerPlugin } from '../providers/registry.ts';
import { EMBEDDING_MODEL, resolveEmbeddingModels } from './embedding-models.ts';
import { SIMULATOR_SETTINGS } from '../providers/simulator/simulator-plugin.ts';
import type {
  Config,
  DeploymentConfig,
  LimiterFailurePolicy,
  ModelConfig,
  PlanId,
  ProviderConfig,
} from '../core/config.ts';
import { PLAN_FILE_ENTRY, overridePlan } from '../core/plan-definition.ts';
import {
  DEFAULT_PARAM_POLICY,
  DEFAULT_PLANS,
  MAX_MESSAGES,
  MODEL_CATALOG,
  RETENTION_DAYS,
  TRIAL_CREDIT_MICROS,
  TRIAL_DAYS,
} from './defaults.ts';
import { FAILURE_POLICIES } from './env-schema.ts';
import { PARAM_POLICY_SCHEMA } from './param-policy-schema.ts';
import {
  mapping,
  oneOf,
  optionalMapping,
  optionalRecord,
  text,
  textList,
  usdAsMicros,
  wholeNumber,
} from '../core/schema-primitives.ts';

/** What the YAML file decides: the rest of Config comes from the environment. */
export type FileConfig = Pick<
  Config,
  | 'providers'
  | 'models'
  | 'plans'
  | 'timeouts'
  | 'routing'
  | 'trialCreditMicros'
  | 'trialDays'
  | 'retentionDays'
  | 'maxMessages'
  | 'embeddingModels'
> & { redisFailure: LimiterFailurePolicy | undefined };

const DEPLOYMENT = mapping({
  provider: text(),
  model: text(),
  weight: wholeNumber()
    .refine((weight) => weight >= 1, { error: 'must be at least 1' })
    .default(1),
  params: PARAM_POLICY_SCHEMA.optional(),
});

const MODEL = mapping({
  deployments: z
    .array(DEPLOYMENT, { error: 'must be a non-empty list' })
    .min(1, { error: 'must be a non-empty list' })
    .optional(),
  fallbacks: textList().optional(),
  price: mapping({
    input: usdAsMicros().optional(),
    output: usdAsMicros().optional(),
    single: usdAsMicros().optional(),
    cached_input: usdAsMicros().optional(),
    cache_write: usdAsMicros().optional(),
    cache_write_1h: usdAsMicros().optional(),
  })
    .nullable()
    .optional(),
  context_window: wholeNumber().optional(),
  max_output_tokens: wholeNumber().optional(),
  default_max_tokens: wholeNumber().optional(),
  description: text().optional(),
});

/** One `providers:` entry: `id`, a registered `type`, and the keys that type's plug-in declares. */
function providerEntry(env: Env): z.ZodType<ProviderConfig, unknown> {
  return z
    .looseObject(
      { id: text(), type: oneOf(PROVIDER_TYPES) },
      { error: (issue) => (issue.code === 'invalid_type' ? 'must be a mapping' : undefined) },
    )
    .transform((entry, context) => {
      const { id, type, ...rest } = entry;
      const settings = providerPlugin(type)!.settingsSchema(env).safeParse(rest);
      if (settings.success) return { id, type, ...settings.data };
      for (const issue of settings.error.issues) context.addIssue({ ...issue });
      return z.NEVER;
    });
}

/** The schema of the YAML file `TOLLGATE_CONFIG` names, over the environment its `api_key_env` keys read. */
export function createFileSchema(env: Env): z.ZodType<FileConfig, unknown> {
  return optionalMapping({
    providers: z.array(providerEntry(env), { error: 'must be a list' }).nullish(),
    models: optionalRecord(MODEL),
    embedding_models: optionalRecord(EMBEDDING_MODEL),
    plans: optionalRecord(PLAN_FILE_ENTRY),
    timeouts: optionalMapping({
      connect_ms: wholeNumber().default(5_000),
      first_byte_ms: wholeNumber().default(60_000),
      idle_stream_ms: wholeNumber().default(60_000),
    }),
    routing: optionalMapping({
      max_attempts: wholeNumber().default(3),
      retry_base_ms: wholeNumber().default(100),
      retry_max_ms: wholeNumber().default(2_000),
      breaker_failure_threshold: wholeNumber().default(5),
      breaker_cooldown_ms: wholeNumber().default(30_000),
    }),
    limits: optionalMapping({ redis_failure: oneOf(FAILURE_POLICIES).optional() }),
    simulator: z.preprocess((value) => value ?? {}, SIMULATOR_SETTINGS),
    trial: optionalMapping({
      credit_usd: usdAsMicros().default(TRIAL_CREDIT_MICROS),
      days: wholeNumber(1).default(TRIAL_DAYS),
    }),
    retention: optionalMapping({ request_log_days: wholeNumber(1).default(RETENTION_DAYS) }),
    requests: optionalMapping({ max_messages: wholeNumber(1).default(MAX_MESSAGES) }),
  }).transform((file, context): FileConfig => {
    const problem = (path: PropertyKey[], message: string): void =>
      context.addIssue({ code: 'custom', path, message });
    const providers = new Map<string, ProviderConfig>([
      ['simulator', { id: 'simulator', type: 'simulator', ...file.simulator }],
    ]);
    (file.providers ?? []).forEach((provider, index) => {
      if (providers.has(provider.id))
        problem(['providers', index, 'id'], `duplicate provider id ${provider.id}`);
      providers.set(provider.id, provider);
    });
    const plans = new Map(DEFAULT_PLANS);
    for (const [id, plan] of Object.entries(file.plans)) {
      const base = plans.get(id as PlanId);
      if (base) plans.set(base.id, overridePlan(base, plan));
      else problem(['plans', id], `unknown plan (plans are ${[...plans.keys()].join(', ')})`);
    }
    const models = resolveModels(file.models, providers, problem);
    const { timeouts, routing } = file;
    return {
      providers,
      models,
      embeddingModels: resolveEmbeddingModels(file.embedding_models, providers, problem),
      plans,
      timeouts: {
        connectMs: timeouts.connect_ms,
        firstByteMs: timeouts.first_byte_ms,
        idleStreamMs: timeouts.idle_stream_ms,
      },
      routing: {
        maxAttempts: routing.max_attempts,
        retryBaseMs: routing.retry_base_ms,
        retryMaxMs: routing.retry_max_ms,
        breakerFailureThreshold: routing.breaker_failure_threshold,
        breakerCooldownMs: routing.breaker_cooldown_ms,
      },
      redisFailure: file.limits.redis_failure,
      trialCreditMicros: file.trial.credit_usd,
      trialDays: file.trial.days,
      retentionDays: file.retention.request_log_days,
      maxMessages: file.requests.max_messages,
    };
  });
}

/** The built-in catalog on the simulator, with the file's models over it; every reference must resolve. */
function resolveModels(
  overrides: Record<string, z.output<typeof MODEL>>,
  providers: ReadonlyMap<string, ProviderConfig>,
  problem: (path: PropertyKey[], message: string) => void,
): Map<string, ModelConfig> {
  const models = new Map<string, ModelConfig>();
  for (const entry of MODEL_CATALOG) {
    const deployment: DeploymentConfig = {
      id: `simulator/${entry.id}`,
      provider: 'simulator',
      upstreamModel: entry.id,
      weight: 1,
      params: DEFAULT_PARAM_POLICY,
    };
    models.set(entry.id, { ...entry, deployments: [deployment], fallbacks: [] });
  }
  for (const [id, raw] of Object.entries(overrides)) {
    const base = models.get(id);
    if (!base && (raw.price === undefined || raw.context_window === undefined))
      problem(['models', id], 'a model outside the built-in catalog needs price and context_window');
    const price = raw.price ?? {};
    const input = price.input ?? price.single ?? base?.inputMicrosPerMillion ?? 0;
    // Without a price block the model keeps its catalog prices; a price block sets them all, a missing cache
    // price meaning the input price (and a missing 1-hour write price, the write price).
    const inherit = raw.price === undefined || raw.price === null ? base : undefined;
    const cacheWrite = price.cache_write ?? inherit?.cacheWriteMicrosPerMillion ?? input;
    const seen = new Set<string>();
    const deployments = raw.deployments?.map((deployment, index): DeploymentConfig => {
      if (!providers.has(deployment.provider))
        problem(
          ['models', id, 'deployments', index, 'provider'],
          `unknown provider id ${deployment.provider}`,
        );
      let deploymentId = `${deployment.provider}/${deployment.model}`;
      if (seen.has(deploymentId)) deploymentId = `${deploymentId}#${index}`;
      seen.add(deploymentId);
      return {
        id: deploymentId,
        provider: deployment.provider,
        upstreamModel: deployment.model,
        weight: deployment.weight,
        params: deployment.params ?? DEFAULT_PARAM_POLICY,
      };
    });
    models.set(id, {
      id,
      description: raw.description ?? base?.description ?? id,
      contextWindow: raw.context_window ?? base?.contextWindow ?? 0,
      maxOutputTokens: raw.max_output_tokens ?? base?.maxOutputTokens ?? 4_096,
      defaultMaxTokens: raw.default_max_tokens ?? base?.defaultMaxTokens ?? 4_096,
      inputMicrosPerMillion: input,
      outputMicrosPerMillion: price.output ?? price.single ?? base?.outputMicrosPerMillion ?? 0,
      cachedInputMicrosPerMillion: price.cached_input ?? inherit?.cachedInputMicrosPerMillion ?? input,
      cacheWriteMicrosPerMillion: cacheWrite,
      cacheWrite1hMicrosPerMillion:
        price.cache_write_1h ?? inherit?.cacheWrite1hMicrosPerMillion ?? price.cache_write ?? cacheWrite,
      latencyClass: base?.latencyClass ?? 'fast',
      deployments: deployments ?? base?.deployments ?? [],
      fallbacks: raw.fallbacks ?? [],
    });
  }
  for (const model of models.values()) {
    if (model.deployments.length === 0)
      problem(['models', model.id, 'deployments'], 'at least one is needed');
    for (const fallback of model.fallbacks) {
      if (!models.has(fallback) || fallback === model.id)
        problem(['models', model.id, 'fallbacks'], `${fallback} is not another configured model`);
    }
  }
  return models;
}
