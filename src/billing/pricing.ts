import type { ModelConfig } from '../core/config.ts';
import type { TokenKinds } from './token-kinds.ts';

/** A model's prices by kind of token, in µUSD per million tokens. */
export type ModelPrices = Pick<
  ModelConfig,
  | 'inputMicrosPerMillion'
  | 'outputMicrosPerMillion'
  | 'cachedInputMicrosPerMillion'
  | 'cacheWriteMicrosPerMillion'
  | 'cacheWrite1hMicrosPerMillion'
>;

/** What each kind of a request's tokens cost, in µUSD scaled by a million (exact integers, before rounding). */
export interface CostBreakdown {
  input: number;
  cachedInput: number;
  cacheWrite5m: number;
  cacheWrite1h: number;
  output: number;
}

export function scaledCosts(model: ModelPrices, kinds: TokenKinds): CostBreakdown {
  return {
    input: kinds.input * model.inputMicrosPerMillion,
    cachedInput: kinds.cachedInput * model.cachedInputMicrosPerMillion,
    cacheWrite5m: kinds.cacheWrite5m * model.cacheWriteMicrosPerMillion,
    cacheWrite1h: kinds.cacheWrite1h * model.cacheWrite1hMicrosPerMillion,
    output: kinds.output * model.outputMicrosPerMillion,
  };
}

/**
 * Cost of a request in integer micro-USD: ceil(Σ kind × its price / 1,000,000) with prices in µUSD per million
 * tokens, so the only rounding is one ceiling per request, in the operator's favour by less than one
 * micro-dollar. Reasoning is part of the output and priced with it.
 */
export function kindsCostMicros(model: ModelPrices, kinds: TokenKinds): number {
  const c = scaledCosts(model, kinds);
  return Math.ceil((c.input + c.cachedInput + c.cacheWrite5m + c.cacheWrite1h + c.output) / 1_000_000);
}

/**
 * The most a request can cost: every prompt token at the dearest prompt price (a cache write can cost more than
 * plain input) and the answer at its longest. What a hold reserves.
 */
export function worstCaseMicros(model: ModelPrices, promptTokens: number, completionTokens: number): number {
  const promptPrice = Math.max(
    model.inputMicrosPerMillion,
    model.cachedInputMicrosPerMillion,
    model.cacheWriteMicrosPerMillion,
    model.cacheWrite1hMicrosPerMillion,
  );
  return Math.ceil(
    (promptTokens * promptPrice + completionTokens * model.outputMicrosPerMillion) / 1_000_000,
  );
}

/** Cost of plain tokens: the prompt at the input price, the completion at the output price. */
export function costMicros(
  model: Pick<ModelConfig, 'inputMicrosPerMillion' | 'outputMicrosPerMillion'>,
  promptTokens: number,
  completionTokens: number,
): number {
  const scaled = promptTokens * model.inputMicrosPerMillion + completionTokens * model.outputMicrosPerMillion;
  return Math.ceil(scaled / 1_000_000);
}
