import type { Usage } from '../core/chat-types.ts';

/**
 * One request's tokens by how they are billed. The parts add up: `input + cachedInput + cacheWrite5m +
 * cacheWrite1h` is the prompt, `output` the completion; `reasoning` is the part of `output` the model kept
 * hidden (billed as output, reported apart).
 */
export interface TokenKinds {
  /** Prompt tokens neither read from nor written to a cache. */
  input: number;
  cachedInput: number;
  /** Written to a cache that lives a few minutes (Anthropic's default 5 minutes). */
  cacheWrite5m: number;
  /** Written to a cache that lives an hour. */
  cacheWrite1h: number;
  output: number;
  reasoning: number;
}

export const NO_TOKENS: TokenKinds = Object.freeze({
  input: 0,
  cachedInput: 0,
  cacheWrite5m: 0,
  cacheWrite1h: 0,
  output: 0,
  reasoning: 0,
});

const count = (value: unknown): number =>
  typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;

/**
 * The kinds in a canonical usage. Details that claim more than their total (an upstream's inconsistency) are cut
 * to it, so the parts never exceed what the totals say and the uncached input is never negative.
 */
export function kindsOfUsage(usage: Usage): TokenKinds {
  const prompt = count(usage.prompt_tokens);
  const output = count(usage.completion_tokens);
  const details = usage.prompt_tokens_details ?? undefined;
  const cachedInput = Math.min(count(details?.cached_tokens), prompt);
  const writes = Math.min(count(details?.cache_write_tokens), prompt - cachedInput);
  const cacheWrite1h = Math.min(count(details?.cache_write_1h_tokens), writes);
  return {
    input: prompt - cachedInput - writes,
    cachedInput,
    cacheWrite5m: writes - cacheWrite1h,
    cacheWrite1h,
    output,
    reasoning: Math.min(count(usage.completion_tokens_details?.reasoning_tokens), output),
  };
}

/** Kinds with no cache and no reasoning (a count Tollgate made itself, or an upstream that tells no more). */
export const plainKinds = (promptTokens: number, completionTokens: number): TokenKinds => ({
  ...NO_TOKENS,
  input: promptTokens,
  output: completionTokens,
});

export const promptOf = (kinds: TokenKinds): number =>
  kinds.input + kinds.cachedInput + kinds.cacheWrite5m + kinds.cacheWrite1h;

/**
 * Canonical usage from the kinds: totals on OpenAI's convention, and details only where there is something to
 * tell (so an answer without caching or reasoning looks exactly as before).
 */
export function usageOfKinds(kinds: TokenKinds): Usage {
  const prompt = promptOf(kinds);
  const usage: Usage = {
    prompt_tokens: prompt,
    completion_tokens: kinds.output,
    total_tokens: prompt + kinds.output,
  };
  const writes = kinds.cacheWrite5m + kinds.cacheWrite1h;
  if (kinds.cachedInput > 0 || writes > 0)
    usage.prompt_tokens_details = {
      cached_tokens: kinds.cachedInput,
      ...(writes > 0 ? { cache_write_tokens: writes } : {}),
      ...(kinds.cacheWrite1h > 0 ? { cache_write_1h_tokens: kinds.cacheWrite1h } : {}),
    };
  if (kinds.reasoning > 0) usage.completion_tokens_details = { reasoning_tokens: kinds.reasoning };
  return usage;
}

/** Anthropic's usage (`input_tokens` excludes the cache reads and writes, which it reports beside it). */
export interface AnthropicUsageFields {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation?: {
    ephemeral_5m_input_tokens?: number | null;
    ephemeral_1h_input_tokens?: number | null;
  } | null;
}

export function kindsOfAnthropic(usage: AnthropicUsageFields): TokenKinds {
  const writes = count(usage.cache_creation_input_tokens);
  // The split by lifetime, when given; writes it does not place are the default 5-minute kind.
  const cacheWrite1h = Math.min(count(usage.cache_creation?.ephemeral_1h_input_tokens), writes);
  return {
    input: count(usage.input_tokens),
    cachedInput: count(usage.cache_read_input_tokens),
    cacheWrite5m: writes - cacheWrite1h,
    cacheWrite1h,
    output: count(usage.output_tokens),
    reasoning: 0,
  };
}

/** Gemini's `usageMetadata`: `promptTokenCount` includes the cached part; `candidatesTokenCount` excludes thoughts. */
export interface GeminiUsageFields {
  promptTokenCount?: number;
  cachedContentTokenCount?: number;
  candidatesTokenCount?: number;
  thoughtsTokenCount?: number;
  toolUsePromptTokenCount?: number;
}

export function kindsOfGemini(usage: GeminiUsageFields | undefined): TokenKinds {
  const prompt = count(usage?.promptTokenCount) + count(usage?.toolUsePromptTokenCount);
  const cachedInput = Math.min(count(usage?.cachedContentTokenCount), prompt);
  const reasoning = count(usage?.thoughtsTokenCount);
  return {
    input: prompt - cachedInput,
    cachedInput,
    cacheWrite5m: 0,
    cacheWrite1h: 0,
    output: count(usage?.candidatesTokenCount) + reasoning,
    reasoning,
  };
}
