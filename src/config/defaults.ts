import { DEFAULT_TEMPERATURE } from '../core/known-params.ts';
import type { ModelConfig, ParamPolicy } from '../core/config.ts';
import { MICROS_PER_USD } from '../core/money.ts';

const USD = MICROS_PER_USD;
/** The built-in catalog's cached-input price as a share of its input price. */
const CACHED_INPUT_SHARE = 0.1;

type CatalogEntry = Omit<ModelConfig, 'deployments' | 'fallbacks'>;

/** The spec's six models: context windows and list prices (USD per 1M tokens, held as µUSD per 1M). */
export const MODEL_CATALOG: readonly CatalogEntry[] = [
  entry('model-a', 'Top reasoning and coding performer', 262_144, 32_768, 3.5, 18, 'medium'),
  entry('model-b', 'Cost-efficient, fast', 65_536, 8_192, 0.13, 0.13, 'fast'),
  entry('model-c', 'Multilingual, long context', 131_072, 16_384, 0.3, 0.3, 'fast'),
  entry('model-d', 'Reasoning and math', 131_072, 32_768, 0.8, 0.8, 'medium'),
  entry('model-e', 'Chinese-language value model', 32_768, 8_192, 0.1, 0.1, 'fast'),
  entry('model-f', 'Enterprise reliability', 32_768, 8_192, 0.15, 0.15, 'fast'),
];

function entry(
  id: string,
  description: string,
  contextWindow: number,
  maxOutputTokens: number,
  inputUsdPerMillion: number,
  outputUsdPerMillion: number,
  latencyClass: 'fast' | 'medium',
): CatalogEntry {
  return {
    id,
    description,
    contextWindow,
    maxOutputTokens,
    defaultMaxTokens: 4_096,
    inputMicrosPerMillion: Math.round(inputUsdPerMillion * USD),
    outputMicrosPerMillion: Math.round(outputUsdPerMillion * USD),
    // A cache read at a tenth of the input price, as the major upstreams bill it; a write at the input price
    // (the simulator never writes one, and a dearer write would raise every hold). docs/decisions.md.
    cachedInputMicrosPerMillion: Math.round(inputUsdPerMillion * USD * CACHED_INPUT_SHARE),
    cacheWriteMicrosPerMillion: Math.round(inputUsdPerMillion * USD),
    cacheWrite1hMicrosPerMillion: Math.round(inputUsdPerMillion * USD),
    latencyClass,
  };
}

/** The spec's free trial: USD 1 of credit, valid 14 days from registration (`trial:` in the YAML). */
export const TRIAL_CREDIT_MICROS = 1 * USD;
export const TRIAL_DAYS = 14;
/** The spec's 90 days of request logs (`retention.request_log_days`). */
export const RETENTION_DAYS = 90;
/** Messages one request may hold (`requests.max_messages`): the spec shows none; docs/decisions.md says why. */
export const MAX_MESSAGES = 2_048;

export { DEFAULT_PLANS } from '../core/plan-definition.ts';

/**
 * Fields refused by default on every deployment: each costs the operator money that token billing does not
 * recover (`service_tier` priority processing, `web_search_options` per-search fees, `audio`/`modalities`
 * audio tokens at audio prices) or keeps users' data in the operator's provider account (`store`,
 * `prompt_cache_retention` "24h"). docs/decisions.md says why others (metadata, prediction, user …) pass.
 */
export const DEFAULT_DENIED_PARAMS: readonly string[] = Object.freeze([
  'service_tier',
  'web_search_options',
  'audio',
  'modalities',
  'store',
  'prompt_cache_retention',
]);

/** The policy of a deployment whose `params:` is absent. */
export const DEFAULT_PARAM_POLICY: ParamPolicy = Object.freeze({
  deny: DEFAULT_DENIED_PARAMS,
  allow: null,
  unlisted: 'refuse',
  drop: Object.freeze([]),
  rename: Object.freeze([]),
  defaults: Object.freeze([Object.freeze(['temperature', DEFAULT_TEMPERATURE] as const)]),
});
