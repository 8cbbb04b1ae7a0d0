import type { EmbeddingModelConfig } from '../core/config.ts';
import { MICROS_PER_USD } from '../core/money.ts';

/** An embedding model as GET /v1/models lists it: a chat model's fields where they apply, and its dimensions. */
export function presentEmbeddingModel(model: EmbeddingModelConfig, created: number): Record<string, unknown> {
  return {
    id: model.id,
    object: 'model',
    created,
    owned_by: 'tollgate',
    type: 'embedding',
    description: model.description,
    dimensions: model.dimensions,
    max_input_tokens: model.maxInputTokens,
    pricing: { input_usd_per_million: model.inputMicrosPerMillion / MICROS_PER_USD },
  };
}
