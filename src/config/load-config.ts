import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type {
  Config,
  DeploymentConfig,
  LimiterFailurePolicy,
  ModelConfig,
  ParamPolicy,
  PlanConfig,
  PlanId,
  ProviderConfig,
  ProviderType,
} from './config.ts';
import {
  DEFAULT_PARAM_POLICY,
  DEFAULT_PLANS,
  GATEWAY_PARAMS,
  MODEL_CATALOG,
  SIMULATOR_PROVIDER,
} from './defaults.ts';
import { loadSecurityConfig, loadTrustProxy } from './load-security-config.ts';
import { usdToMicros } from '../shared/money.ts';

/** A configuration mistake: start-up stops with this one message, which names the field. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;
type Obj = Record<string, unknown>;

const PROVIDER_TYPES: readonly ProviderType[] = ['openai', 'anthropic', 'gemini', 'simulator'];
const FAILURE_POLICIES: readonly LimiterFailurePolicy[] = ['local', 'allow', 'deny'];

/** Builds the frozen configuration from the environment and the YAML file `TOLLGATE_CONFIG` names. */
export function loadConfig(env: Env = process.env): Config {
  const file = env['TOLLGATE_CONFIG'];
  let yaml: Obj = {};
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new ConfigError(`TOLLGATE_CONFIG: cannot read ${file}: ${(error as Error).message}`);
    }
    const parsed: unknown = parseYaml(text);
    if (parsed !== null && parsed !== undefined && !isObj(parsed))
      throw new ConfigError(`${file}: not a mapping`);
    yaml = (parsed as Obj | null) ?? {};
  }
  return parseConfig(yaml, env);
}

/** Validates a parsed YAML document against the environment; throws ConfigError naming the first bad field. */
export function parseConfig(yaml: Obj, env: Env): Config {
  checkKeys(yaml, '', ['providers', 'models', 'plans', 'timeouts', 'routing', 'limits', 'simulator']);
  const simulator = optionalObj(yaml['simulator'], 'simulator');
  const providers = parseProviders(yaml['providers'], env, simulator);
  const models = parseModels(yaml['models'], providers);
  const port = integer(env['PORT'] ?? '8080', 'PORT', 0, 65_535);
  const host = env['HOST'] ?? '0.0.0.0';
  const stripeKey = env['STRIPE_SECRET_KEY'];
  const stripeSecret = env['STRIPE_WEBHOOK_SECRET'];
  if (Boolean(stripeKey) !== Boolean(stripeSecret)) {
    throw new ConfigError('STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET must be set together');
  }
  const timeouts = optionalObj(yaml['timeouts'], 'timeouts');
  const routing = optionalObj(yaml['routing'], 'routing');
  const limits = optionalObj(yaml['limits'], 'limits');
  const policy = limits['redis_failure'] ?? env['TOLLGATE_REDIS_FAILURE'] ?? 'local';
  if (!FAILURE_POLICIES.includes(policy as LimiterFailurePolicy)) {
    throw new ConfigError(`limits.redis_failure: must be one of ${FAILURE_POLICIES.join(', ')}`);
  }
  const publicUrl = env['PUBLIC_URL'] ? env['PUBLIC_URL'].replace(/\/$/, '') : undefined;
  if (publicUrl !== undefined && !/^https?:\/\/[^/]/.test(publicUrl))
    throw new ConfigError('PUBLIC_URL: must be an http(s) URL');
  const toError = (message: string): ConfigError => new ConfigError(message);
  const security = loadSecurityConfig(
    env,
    {
      publicUrl,
      smtpUrl: env['SMTP_URL'] || undefined,
      stripe: Boolean(stripeKey && stripeSecret),
      webhookAllowPrivate: env['TOLLGATE_WEBHOOK_ALLOW_PRIVATE'] === 'true',
    },
    toError,
  );
  return Object.freeze({
    port,
    host,
    publicUrl,
    databaseUrl: env['DATABASE_URL'] ?? 'sqlite:./data/tollgate.db',
    redisUrl: env['REDIS_URL'] || undefined,
    adminKey: env['TOLLGATE_ADMIN_KEY'] || undefined,
    smtpUrl: env['SMTP_URL'] || undefined,
    logLevel: env['LOG_LEVEL'] ?? 'info',
    bodyLimitBytes: integer(
      env['TOLLGATE_BODY_LIMIT'] ?? String(4 * 1024 * 1024),
      'TOLLGATE_BODY_LIMIT',
      1024,
    ),
    maxMessages: 2048,
    webhookAllowPrivate: env['TOLLGATE_WEBHOOK_ALLOW_PRIVATE'] === 'true',
    trustProxy: loadTrustProxy(env['TOLLGATE_TRUST_PROXY'], toError),
    security,
    limiterFailurePolicy: policy as LimiterFailurePolicy,
    trialCreditMicros: 1_000_000,
    trialDays: 14,
    retentionDays: 90,
    stripe:
      stripeKey && stripeSecret
        ? { secretKey: stripeKey, webhookSecret: stripeSecret, apiBase: env['STRIPE_API_BASE'] || undefined }
        : undefined,
    models,
    providers,
    plans: parsePlans(yaml['plans']),
    timeouts: {
      connectMs: optionalInt(timeouts, 'connect_ms', 'timeouts', 5_000),
      firstByteMs: optionalInt(timeouts, 'first_byte_ms', 'timeouts', 60_000),
      idleStreamMs: optionalInt(timeouts, 'idle_stream_ms', 'timeouts', 60_000),
    },
    routing: {
      maxAttempts: optionalInt(routing, 'max_attempts', 'routing', 3),
      retryBaseMs: optionalInt(routing, 'retry_base_ms', 'routing', 100),
      retryMaxMs: optionalInt(routing, 'retry_max_ms', 'routing', 2_000),
      breakerFailureThreshold: optionalInt(routing, 'breaker_failure_threshold', 'routing', 5),
      breakerCooldownMs: optionalInt(routing, 'breaker_cooldown_ms', 'routing', 30_000),
    },
  });
}

function parseProviders(value: unknown, env: Env, simulator: Obj): Map<string, ProviderConfig> {
  const providers = new Map<string, ProviderConfig>([
    [
      'simulator',
      {
        ...SIMULATOR_PROVIDER,
        chunkIntervalMs: optionalInt(
          simulator,
          'chunk_interval_ms',
          'simulator',
          SIMULATOR_PROVIDER.chunkIntervalMs,
        ),
        firstTokenMs: optionalInt(simulator, 'first_token_ms', 'simulator', SIMULATOR_PROVIDER.firstTokenMs),
      },
    ],
  ]);
  if (value === undefined || value === null) return providers;
  if (!Array.isArray(value)) throw new ConfigError('providers: must be a list');
  value.forEach((raw: unknown, index) => {
    const at = `providers[${index}]`;
    if (!isObj(raw)) throw new ConfigError(`${at}: must be a mapping`);
    checkKeys(raw, at, [
      'id',
      'type',
      'base_url',
      'api_key_env',
      'headers',
      'chunk_interval_ms',
      'first_token_ms',
    ]);
    const id = string(raw['id'], `${at}.id`);
    if (providers.has(id)) throw new ConfigError(`${at}.id: duplicate provider id ${id}`);
    const type = string(raw['type'], `${at}.type`) as ProviderType;
    if (!PROVIDER_TYPES.includes(type)) {
      throw new ConfigError(`${at}.type: must be one of ${PROVIDER_TYPES.join(', ')}`);
    }
    const baseUrl = type === 'simulator' ? 'simulator://local' : string(raw['base_url'], `${at}.base_url`);
    if (type !== 'simulator' && !/^https?:\/\//.test(baseUrl)) {
      throw new ConfigError(`${at}.base_url: must be an http(s) URL`);
    }
    let apiKey: string | undefined;
    if (raw['api_key_env'] !== undefined) {
      const name = string(raw['api_key_env'], `${at}.api_key_env`);
      apiKey = env[name];
      if (!apiKey) throw new ConfigError(`${at}.api_key_env: environment variable ${name} is not set`);
    }
    const headers = optionalObj(raw['headers'], `${at}.headers`);
    for (const [name, header] of Object.entries(headers)) string(header, `${at}.headers.${name}`);
    providers.set(id, {
      id,
      type,
      baseUrl: baseUrl.replace(/\/$/, ''),
      apiKey,
      headers: headers as Record<string, string>,
      chunkIntervalMs: optionalInt(raw, 'chunk_interval_ms', at, SIMULATOR_PROVIDER.chunkIntervalMs),
      firstTokenMs: optionalInt(raw, 'first_token_ms', at, 0),
    });
  });
  return providers;
}

function parseModels(value: unknown, providers: Map<string, ProviderConfig>): Map<string, ModelConfig> {
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
  const overrides = optionalObj(value, 'models');
  for (const [id, raw] of Object.entries(overrides)) {
    const at = `models.${id}`;
    if (!isObj(raw)) throw new ConfigError(`${at}: must be a mapping`);
    checkKeys(raw, at, [
      'deployments',
      'fallbacks',
      'price',
      'context_window',
      'max_output_tokens',
      'default_max_tokens',
      'description',
    ]);
    const base = models.get(id);
    const price = optionalObj(raw['price'], `${at}.price`);
    if (!base && (raw['price'] === undefined || raw['context_window'] === undefined)) {
      throw new ConfigError(`${at}: a model outside the built-in catalog needs price and context_window`);
    }
    const inputUsd = price['input'] ?? price['single'];
    const outputUsd = price['output'] ?? price['single'];
    models.set(id, {
      id,
      description:
        raw['description'] === undefined
          ? (base?.description ?? id)
          : string(raw['description'], `${at}.description`),
      contextWindow: optionalInt(raw, 'context_window', at, base?.contextWindow ?? 0),
      maxOutputTokens: optionalInt(raw, 'max_output_tokens', at, base?.maxOutputTokens ?? 4_096),
      defaultMaxTokens: optionalInt(raw, 'default_max_tokens', at, base?.defaultMaxTokens ?? 4_096),
      inputMicrosPerMillion:
        inputUsd === undefined ? (base?.inputMicrosPerMillion ?? 0) : usdPrice(inputUsd, `${at}.price.input`),
      outputMicrosPerMillion:
        outputUsd === undefined
          ? (base?.outputMicrosPerMillion ?? 0)
          : usdPrice(outputUsd, `${at}.price.output`),
      latencyClass: base?.latencyClass ?? 'fast',
      deployments:
        raw['deployments'] === undefined
          ? (base?.deployments ?? [])
          : parseDeployments(raw['deployments'], at, providers),
      fallbacks: raw['fallbacks'] === undefined ? [] : stringList(raw['fallbacks'], `${at}.fallbacks`),
    });
  }
  for (const model of models.values()) {
    if (model.deployments.length === 0)
      throw new ConfigError(`models.${model.id}.deployments: at least one is needed`);
    for (const fallback of model.fallbacks) {
      if (!models.has(fallback) || fallback === model.id) {
        throw new ConfigError(`models.${model.id}.fallbacks: ${fallback} is not another configured model`);
      }
    }
  }
  return models;
}

function parseDeployments(
  value: unknown,
  at: string,
  providers: Map<string, ProviderConfig>,
): DeploymentConfig[] {
  if (!Array.isArray(value) || value.length === 0)
    throw new ConfigError(`${at}.deployments: must be a non-empty list`);
  const seen = new Set<string>();
  return value.map((raw: unknown, index) => {
    const where = `${at}.deployments[${index}]`;
    if (!isObj(raw)) throw new ConfigError(`${where}: must be a mapping`);
    checkKeys(raw, where, ['provider', 'model', 'weight', 'params']);
    const provider = string(raw['provider'], `${where}.provider`);
    if (!providers.has(provider)) throw new ConfigError(`${where}.provider: unknown provider id ${provider}`);
    const upstreamModel = string(raw['model'], `${where}.model`);
    const weight = optionalInt(raw, 'weight', where, 1);
    if (weight < 1) throw new ConfigError(`${where}.weight: must be at least 1`);
    let id = `${provider}/${upstreamModel}`;
    if (seen.has(id)) id = `${id}#${index}`;
    seen.add(id);
    const params =
      raw['params'] === undefined ? DEFAULT_PARAM_POLICY : parseParamPolicy(raw['params'], `${where}.params`);
    return { id, provider, upstreamModel, weight, params };
  });
}

const UNLISTED: readonly ParamPolicy['unlisted'][] = ['refuse', 'drop'];
/** Ranges of the spec's sampling fields, for defaults an operator sets. */
const PARAM_RANGES: Readonly<Record<string, readonly [number, number]>> = {
  temperature: [0, 2],
  top_p: [0, 1],
  presence_penalty: [-2, 2],
  frequency_penalty: [-2, 2],
};

/** A deployment's `params:`; the spec's temperature default is kept unless overridden, dropped or not allowed. */
function parseParamPolicy(value: unknown, at: string): ParamPolicy {
  if (!isObj(value)) throw new ConfigError(`${at}: must be a mapping`);
  checkKeys(value, at, ['defaults', 'drop', 'rename', 'deny', 'allow', 'unlisted']);
  const fields = (key: string): string[] => {
    if (value[key] === undefined) return [];
    const names = stringList(value[key], `${at}.${key}`);
    names.forEach((name, index) => paramName(name, `${at}.${key}[${index}]`));
    return names;
  };
  const drop = fields('drop');
  const explicitDeny = value['deny'] === undefined ? undefined : fields('deny');
  const allow = value['allow'] === undefined ? null : new Set(fields('allow'));
  const rename = Object.entries(optionalObj(value['rename'], `${at}.rename`)).map(([from, to]) => {
    paramName(from, `${at}.rename.${from}`);
    paramName(string(to, `${at}.rename.${from}`), `${at}.rename.${from}`);
    if (from === to) throw new ConfigError(`${at}.rename.${from}: renames a field to itself`);
    return [from, to as string] as const;
  });
  const defaults: (readonly [string, unknown])[] = Object.entries(
    optionalObj(value['defaults'], `${at}.defaults`),
  ).map(([field, fallback]) => {
    const where = `${at}.defaults.${field}`;
    paramName(field, where);
    if (fallback === null || fallback === undefined) throw new ConfigError(`${where}: must have a value`);
    const range = PARAM_RANGES[field];
    if (range && (typeof fallback !== 'number' || fallback < range[0] || fallback > range[1]))
      throw new ConfigError(`${where}: must be a number from ${range[0]} to ${range[1]}`);
    return [field, fallback] as const;
  });
  for (const field of explicitDeny ?? []) {
    if (drop.includes(field)) throw new ConfigError(`${at}.deny: ${field} is in drop too; choose one`);
    if (allow?.has(field)) throw new ConfigError(`${at}.deny: ${field} is in allow too; choose one`);
  }
  const denied = new Set(explicitDeny ?? []);
  for (const [field] of defaults) {
    if (drop.includes(field) || denied.has(field))
      throw new ConfigError(`${at}.defaults.${field}: a default for a field this deployment drops or denies`);
  }
  // The built-in list yields to an explicit choice: a field the operator drops, renames or allows is not denied.
  const deny =
    explicitDeny ??
    DEFAULT_PARAM_POLICY.deny.filter(
      (field) => !drop.includes(field) && !allow?.has(field) && !rename.some(([from]) => from === field),
    );
  if (value['unlisted'] !== undefined && !allow) throw new ConfigError(`${at}.unlisted: only with allow`);
  const unlisted = (value['unlisted'] ?? 'refuse') as ParamPolicy['unlisted'];
  if (!UNLISTED.includes(unlisted))
    throw new ConfigError(`${at}.unlisted: must be one of ${UNLISTED.join(', ')}`);
  const temperatureSent =
    !drop.includes('temperature') &&
    !deny.includes('temperature') &&
    (allow === null || allow.has('temperature'));
  if (temperatureSent && !defaults.some(([field]) => field === 'temperature'))
    defaults.unshift(DEFAULT_PARAM_POLICY.defaults[0]!);
  return Object.freeze({ deny, allow, unlisted, drop, rename, defaults });
}

function paramName(name: string, at: string): void {
  if (GATEWAY_PARAMS.includes(name))
    throw new ConfigError(`${at}: ${name} is set by the gateway; a policy cannot change it`);
}

function parsePlans(value: unknown): Map<PlanId, PlanConfig> {
  const plans = new Map(DEFAULT_PLANS);
  for (const [id, raw] of Object.entries(optionalObj(value, 'plans'))) {
    const at = `plans.${id}`;
    const base = plans.get(id as PlanId);
    if (!base) throw new ConfigError(`${at}: unknown plan (plans are ${[...plans.keys()].join(', ')})`);
    if (!isObj(raw)) throw new ConfigError(`${at}: must be a mapping`);
    checkKeys(raw, at, [
      'name',
      'requests_per_minute',
      'tokens_per_minute',
      'daily_tokens',
      'monthly_price_usd',
      'monthly_allowance_usd',
      'max_keys',
    ]);
    const limit = (key: string, fallback: number | null): number | null =>
      raw[key] === undefined
        ? fallback
        : raw[key] === null || raw[key] === 'unlimited'
          ? null
          : optionalInt(raw, key, at, 0);
    plans.set(base.id, {
      ...base,
      name: raw['name'] === undefined ? base.name : string(raw['name'], `${at}.name`),
      requestsPerMinute: limit('requests_per_minute', base.requestsPerMinute),
      tokensPerMinute: limit('tokens_per_minute', base.tokensPerMinute),
      dailyTokens: limit('daily_tokens', base.dailyTokens),
      maxActiveKeys: limit('max_keys', base.maxActiveKeys),
      monthlyPriceMicros:
        raw['monthly_price_usd'] === undefined
          ? base.monthlyPriceMicros
          : usdPrice(raw['monthly_price_usd'], `${at}.monthly_price_usd`),
      monthlyAllowanceMicros:
        raw['monthly_allowance_usd'] === undefined
          ? base.monthlyAllowanceMicros
          : usdPrice(raw['monthly_allowance_usd'], `${at}.monthly_allowance_usd`),
    });
  }
  return plans;
}

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkKeys(obj: Obj, at: string, allowed: readonly string[]): void {
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key)) throw new ConfigError(`${at ? `${at}.` : ''}${key}: unknown field`);
  }
}

function optionalObj(value: unknown, at: string): Obj {
  if (value === undefined || value === null) return {};
  if (!isObj(value)) throw new ConfigError(`${at}: must be a mapping`);
  return value;
}

function string(value: unknown, at: string): string {
  if (typeof value !== 'string' || value === '') throw new ConfigError(`${at}: must be a non-empty string`);
  return value;
}

function stringList(value: unknown, at: string): string[] {
  if (!Array.isArray(value)) throw new ConfigError(`${at}: must be a list`);
  return value.map((item: unknown, index) => string(item, `${at}[${index}]`));
}

function integer(value: unknown, at: string, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const number = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number) || number < min || number > max) {
    throw new ConfigError(`${at}: must be a whole number from ${min} to ${max}`);
  }
  return number;
}

function optionalInt(obj: Obj, key: string, at: string, fallback: number): number {
  return obj[key] === undefined ? fallback : integer(obj[key], `${at}.${key}`);
}

/** A price in USD (per million tokens, or per month) to integer micro-USD. */
function usdPrice(value: unknown, at: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new ConfigError(`${at}: must be a non-negative number of USD`);
  }
  return usdToMicros(value);
}
