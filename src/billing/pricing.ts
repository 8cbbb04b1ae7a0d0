import type { ModelConfig } from '../core/config.ts';

/**
 * Cost of a request in integer micro-USD: ceil((prompt × input + completion × output) / 1,000,000) with
 * prices in µUSD per million tokens, so the only rounding is one ceiling per request, in the operator's favour
 * by less than one micro-dollar.
 */
export function costMicros(
  model: Pick<ModelConfig, 'inputMicrosPerMillion' | 'outputMicrosPerMillion'>,
  promptTokens: number,
  completionTokens: number,
): number {
  const scaled = promptTokens * model.inputMicrosPerMillion + completionTokens * model.outputMicrosPerMillion;
  return Math.ceil(scaled / 1_000_000);
}
