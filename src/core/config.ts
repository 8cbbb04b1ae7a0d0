/** The `type:` of a `providers:` entry: the name of a provider plug-in (src/providers/registry.ts lists them). */
export type ProviderType = string;

/** Fields the gateway sets or reads itself: a parameter policy cannot touch them. */
export const GATEWAY_PARAMS: readonly string[] = Object.freeze([
  'model',
  'messages',
  'stream',
  'stream_options',
]);

/** Prices are micro-USD per million tokens: integers, so a cost is exact integer arithmetic. */
export interface ModelConfig {
  id: string;
  description: string;
  contextWindow: number;
  /** The most tokens one answer may ask for (validates `max_tokens`). */
  maxOutputTokens: number;
  /** What a hold reserves for the answer when the request sets no `max_tokens`. */
  defaultMaxTokens: number;
  inputMicrosPerMillion: number;
  outputMicrosPerMillion: number;
  /** Prompt tokens read from the upstream's cache. */
  cachedInputMicrosPerMillion: number;
  /** Prompt tokens written to a cache of a few minutes (Anthropic's 5-minute writes). */
  cacheWriteMicrosPerMillion: number;
  /** Prompt tokens written to a cache of an hour. */
  cacheWrite1hMicrosPerMillion: number;
  latencyClass: 'fast' | 'medium';
  deployments: DeploymentConfig[];
  /** Other public models tried, in order, when every deployment of this one fails. */
  fallbacks: string[];
}

export interface DeploymentConfig {
  /** `provider/upstream-model`, unique within the model: what logs, metrics and /health call it. */
  id: string;
  provider: string;
  upstreamModel: string;
  weight: number;
  /** What this upstream accepts: applied to the client's fields before every call to it. */
  params: ParamPolicy;
}

/**
 * A deployment's parameter policy (`params:` in the YAML; src/routing/param-policy.ts applies it). Names are
 * the client's field names. The gateway's own fields (model, messages, stream, stream_options) are never
 * touched. Order: deny, allow-list, drop, rename, defaults.
 */
export interface ParamPolicy {
  /** Refused with 400 `invalid_request` naming the field (default: the cost and data-retention list). */
  deny: readonly string[];
  /** Allow-list mode: only these fields (and rename sources) may come from the client; null passes the rest. */
  allow: ReadonlySet<string> | null;
  /** What a field outside the allow-list gets: a 400 naming it, or left out silently. */
  unlisted: 'refuse' | 'drop';
  /** Left out silently (the upstream rejects them). */
  drop: readonly string[];
  /** [client name, upstream name]: the value moves (when the upstream name is not set already). */
  rename: readonly (readonly [string, string])[];
  /** [field, value] set when the request has none; temperature 0.7 (the spec's) unless overridden or dropped. */
  defaults: readonly (readonly [string, unknown])[];
}

/**
 * One configured upstream. `type` names its plug-in (src/providers/registry.ts), whose schema validated the
 * entry's keys and made `options` of its own ones (the simulator's pacing; none for HTTP upstreams).
 */
export interface ProviderConfig<Options = unknown> {
  id: string;
  type: ProviderType;
  baseUrl: string;
  apiKey: string | undefined;
  /** Extra headers for every upstream request (e.g. Azure's api-key, OpenRouter's referer). */
  headers: Record<string, string>;
  options: Options;
}

import type { PlanConfig, PlanId } from './plan-definition.ts';
export type { PlanConfig, PlanId };

export interface TimeoutsConfig {
  connectMs: number;
  firstByteMs: number;
  idleStreamMs: number;
}

export interface RoutingConfig {
  /** Attempts across deployments and fallbacks before 502. */
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  breakerFailureThreshold: number;
  breakerCooldownMs: number;
}

/**
 * Which peers may set the client address: false (the socket's), a hop count from the right of
 * X-Forwarded-For, or the trusted proxies' addresses and CIDR blocks (docs/security.md).
 */
export type TrustProxy = false | number | readonly string[];

/** Security settings from the environment (docs/security.md). */
export interface SecurityConfig {
  /** NODE_ENV or TOLLGATE_ENV is `production`: start-up refuses unsafe defaults. */
  production: boolean;
  /** Spending the trial credit needs a verified e-mail address (by default: when SMTP_URL is set). */
  requireVerifiedEmail: boolean;
  keyCreationsPerMinute: number;
  /** Keys that encrypt webhook signing secrets at rest: the current one, and older ones still read. */
  secretKeys: { current: string; previous: string[] } | undefined;
  /** Bearer token that opens /metrics on the public port (the admin key does too). */
  metricsToken: string | undefined;
  /** A separate listener that serves /metrics alone, without a token. */
  metricsAddress: { host: string; port: number } | undefined;
  /** Ports a webhook URL may name, or any. */
  webhookPorts: readonly number[] | 'any';
}

/** What admission does while Redis cannot be reached: per-instance limits, let all through, or refuse all. */
export type LimiterFailurePolicy = 'local' | 'allow' | 'deny';

export interface Config {
  port: number;
  host: string;
  /** Base address that links handed to users start with (checkout pages); unset: the server's own address. */
  publicUrl: string | undefined;
  databaseUrl: string;
  redisUrl: string | undefined;
  adminKey: string | undefined;
  smtpUrl: string | undefined;
  logLevel: string;
  bodyLimitBytes: number;
  maxMessages: number;
  webhookAllowPrivate: boolean;
  /** Who may set the client address through X-Forwarded-For (behind load balancers that append to it). */
  trustProxy: TrustProxy;
  security: SecurityConfig;
  limiterFailurePolicy: LimiterFailurePolicy;
  trialCreditMicros: number;
  trialDays: number;
  retentionDays: number;
  /** Stripe credentials; `apiBase` points the client elsewhere (stripe-mock). */
  stripe: { secretKey: string; webhookSecret: string; apiBase: string | undefined } | undefined;
  models: ReadonlyMap<string, ModelConfig>;
  /** Models of POST /v1/embeddings (src/config/embedding-models.ts). */
  embeddingModels: ReadonlyMap<string, EmbeddingModelConfig>;
  providers: ReadonlyMap<string, ProviderConfig>;
  plans: ReadonlyMap<PlanId, PlanConfig>;
  timeouts: TimeoutsConfig;
  routing: RoutingConfig;
}

/** An embedding model: its vectors' length, the most tokens one input may hold, its price, where it runs. */
export interface EmbeddingModelConfig {
  id: string;
  description: string;
  /** The length of its vectors, unless the request asks `dimensions` (which may only shorten them). */
  dimensions: number;
  /** The most tokens one input may hold (OpenAI's embedding models: 8,192). */
  maxInputTokens: number;
  inputMicrosPerMillion: number;
  deployments: EmbeddingDeployment[];
}

export interface EmbeddingDeployment {
  /** `provider/upstream-model`. */
  id: string;
  provider: string;
  upstreamModel: string;
}
