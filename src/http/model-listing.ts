import type { ModelConfig } from '../core/config.ts';

/**
 * When a model "was created", as GET /v1/models says: a fixed day per model id (a hash of the id into 2024),
 * the same on every instance and after every restart, and different between models, so clients that sort or
 * cache by it see a stable catalog. Tollgate does not know when an upstream model was released.
 */
export function modelCreated(id: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193) >>> 0;
  return CATALOG_EPOCH + (hash % 366) * 86_400;
}

/** 2024-01-01T00:00:00Z. */
const CATALOG_EPOCH = 1_704_067_200;

/** A chat model as Anthropic's Models API lists it (`GET /v1/models` with an `anthropic-version` header). */
export function anthropicModel(model: ModelConfig): Record<string, unknown> {
  return {
    type: 'model',
    id: model.id,
    display_name: model.description === model.id ? model.id : `${model.id} (${model.description})`,
    created_at: new Date(modelCreated(model.id) * 1000).toISOString(),
    deprecated_at: null,
    retires_at: null,
    lifecycle: 'active',
    line: null,
    capabilities: null,
    max_input_tokens: model.contextWindow,
    max_tokens: model.maxOutputTokens,
  };
}

/** Anthropic's page of a list: its data, first and last ids, and whether more follow. */
export function anthropicPage(data: Record<string, unknown>[]): Record<string, unknown> {
  return {
    data,
    first_id: data[0]?.['id'] ?? null,
    last_id: data.at(-1)?.['id'] ?? null,
    has_more: false,
  };
}
