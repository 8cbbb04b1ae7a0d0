/**
 * The stored kinds of a group of tokens (usage records and the daily rollup hold the same four columns):
 * `prompt_tokens` counts every prompt token and `completion_tokens` every generated one; these say how many
 * of them were cache reads, cache writes (of which 1-hour ones) and reasoning.
 */
export interface KindCounts {
  cachedInputTokens: number;
  cacheWriteTokens: number;
  cacheWrite1hTokens: number;
  reasoningTokens: number;
}

export const NO_KIND_COUNTS: KindCounts = Object.freeze({
  cachedInputTokens: 0,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  reasoningTokens: 0,
});

/** The columns' sums, named as `kindCountsOf` reads them. */
export const KIND_SUMS_SQL = `CAST(SUM(cached_input_tokens) AS BIGINT) AS cached_input_tokens,
  CAST(SUM(cache_write_tokens) AS BIGINT) AS cache_write_tokens,
  CAST(SUM(cache_write_1h_tokens) AS BIGINT) AS cache_write_1h_tokens,
  CAST(SUM(reasoning_tokens) AS BIGINT) AS reasoning_tokens`;

export const KIND_COLUMNS_SQL =
  'cached_input_tokens, cache_write_tokens, cache_write_1h_tokens, reasoning_tokens';

/** The four counts of a row that selected them (as KIND_SUMS_SQL or KIND_COLUMNS_SQL name them). */
export function kindCountsOf(row: Record<string, unknown>): KindCounts {
  return {
    cachedInputTokens: Number(row['cached_input_tokens'] ?? 0),
    cacheWriteTokens: Number(row['cache_write_tokens'] ?? 0),
    cacheWrite1hTokens: Number(row['cache_write_1h_tokens'] ?? 0),
    reasoningTokens: Number(row['reasoning_tokens'] ?? 0),
  };
}

export const addKindCounts = (a: KindCounts, b: KindCounts): KindCounts => ({
  cachedInputTokens: a.cachedInputTokens + b.cachedInputTokens,
  cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
  cacheWrite1hTokens: a.cacheWrite1hTokens + b.cacheWrite1hTokens,
  reasoningTokens: a.reasoningTokens + b.reasoningTokens,
});

/**
 * The kinds as an answer of the API shows them, beside `prompt_tokens` and `completion_tokens`: the uncached
 * input (the prompt less cache reads and writes) and each kind.
 */
export function presentKinds(promptTokens: number, kinds: KindCounts): Record<string, number> {
  return {
    input_tokens: promptTokens - kinds.cachedInputTokens - kinds.cacheWriteTokens,
    cached_input_tokens: kinds.cachedInputTokens,
    cache_write_tokens: kinds.cacheWriteTokens,
    cache_write_1h_tokens: kinds.cacheWrite1hTokens,
    reasoning_tokens: kinds.reasoningTokens,
  };
}
