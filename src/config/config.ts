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
}

export type ProviderType = 'openai' | 'anthropic' | 'gemini' | 'simulator';

export interface ProviderConfig {
  id: string;
  type: ProviderType;
  baseUrl: string;
  apiKey: string | undefined;
  /** Extra headers for every upstream request (e.g. Azure's api-key, OpenRouter's referer). */
  headers: Record<string, string>;
  /** Simulator only: pause between streamed chunks, and before the first. */
  chunkIntervalMs: number;
  firstTokenMs: number;
}

export type PlanId = 'free_trial' | 'starter' | 'pro' | 'enterprise';

export interface PlanConfig {
  id: PlanId;
  name: string;
  /** null means unlimited. */
  requestsPerMinute: number | null;
  tokensPerMinute: number | null;
  dailyTokens: number | null;
  monthlyPriceMicros: number;
  /** Credit granted with each paid period, expiring at the period's end. */
  monthlyAllowanceMicros: number;
  purchasable: boolean;
}

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

/** What admission does while Redis cannot be reached: per-instance limits, let all through, or refuse all. */
export type LimiterFailurePolicy = 'local' | 'allow' | 'deny';

export interface Config {
  port: number;
  host: string;
  /** Base address that links handed to users start with (checkout pages); unset: the address they called. */
  publicUrl: string | undefined;
  databaseUrl: string;
  redisUrl: string | undefined;
  adminKey: string | undefined;
  smtpUrl: string | undefined;
  logLevel: string;
  bodyLimitBytes: number;
  maxMessages: number;
  webhookAllowPrivate: boolean;
  /** Take client addresses from X-Forwarded-For (behind a load balancer that sets it). */
  trustProxy: boolean;
  limiterFailurePolicy: LimiterFailurePolicy;
  trialCreditMicros: number;
  trialDays: number;
  retentionDays: number;
  /** Stripe credentials; `apiBase` points the client elsewhere (stripe-mock). */
  stripe: { secretKey: string; webhookSecret: string; apiBase: string | undefined } | undefined;
  models: ReadonlyMap<string, ModelConfig>;
  providers: ReadonlyMap<string, ProviderConfig>;
  plans: ReadonlyMap<PlanId, PlanConfig>;
  timeouts: TimeoutsConfig;
  routing: RoutingConfig;
}
