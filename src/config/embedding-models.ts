import { z } from 'zod';
import type { EmbeddingDeployment, EmbeddingModelConfig, ProviderConfig } from '../core/config.ts';
import { mapping, text, usdAsMicros, wholeNumber } from '../core/schema-primitives.ts';
import { MICROS_PER_USD } from '../core/money.ts';

type CatalogEntry = Omit<EmbeddingModelConfig, 'deployments'>;

/** The built-in embedding models, served by the simulator unless the file gives them deployments. */
export const EMBEDDING_CATALOG: readonly CatalogEntry[] = [
  {
    id: 'embed-a',
    description: 'Text embeddings, 1,024 dimensions',
    dimensions: 1_024,
    maxInputTokens: 8_192,
    inputMicrosPerMillion: Math.round(0.02 * MICROS_PER_USD),
  },
  {
    id: 'embed-b',
    description: 'Compact text embeddings, 256 dimensions',
    dimensions: 256,
    maxInputTokens: 8_192,
    inputMicrosPerMillion: Math.round(0.01 * MICROS_PER_USD),
  },
];

/** One `embedding_models:` entry of the YAML file. */
export const EMBEDDING_MODEL = mapping({
  deployments: z
    .array(mapping({ provider: text(), model: text() }), { error: 'must be a non-empty list' })
    .min(1, { error: 'must be a non-empty list' })
    .optional(),
  price: mapping({ input: usdAsMicros() }).optional(),
  dimensions: wholeNumber(1, 65_536).optional(),
  max_input_tokens: wholeNumber(1).optional(),
  description: text().optional(),
});

/** Provider types that serve embeddings (an Anthropic upstream has none). */
const EMBEDDING_PROVIDERS = new Set(['simulator', 'openai', 'gemini']);

/** The built-in embedding catalog on the simulator, with the file's entries over it. */
export function resolveEmbeddingModels(
  overrides: Record<string, z.output<typeof EMBEDDING_MODEL>>,
  providers: ReadonlyMap<string, ProviderConfig>,
  problem: (path: PropertyKey[], message: string) => void,
): Map<string, EmbeddingModelConfig> {
  const models = new Map<string, EmbeddingModelConfig>();
  for (const entry of EMBEDDING_CATALOG)
    models.set(entry.id, {
      ...entry,
      deployments: [{ id: `simulator/${entry.id}`, provider: 'simulator', upstreamModel: entry.id }],
    });
  for (const [id, raw] of Object.entries(overrides)) {
    const base = models.get(id);
    if (!base && (raw.price === undefined || raw.dimensions === undefined))
      problem(['embedding_models', id], 'a model outside the built-in catalog needs price and dimensions');
    const deployments = raw.deployments?.map((deployment, index): EmbeddingDeployment => {
      const provider = providers.get(deployment.provider);
      if (!provider)
        problem(
          ['embedding_models', id, 'deployments', index, 'provider'],
          `unknown provider id ${deployment.provider}`,
        );
      else if (!EMBEDDING_PROVIDERS.has(provider.type))
        problem(
          ['embedding_models', id, 'deployments', index, 'provider'],
          `a ${provider.type} provider serves no embeddings (openai, gemini and the simulator do)`,
        );
      return {
        id: `${deployment.provider}/${deployment.model}`,
        provider: deployment.provider,
        upstreamModel: deployment.model,
      };
    });
    models.set(id, {
      id,
      description: raw.description ?? base?.description ?? id,
      dimensions: raw.dimensions ?? base?.dimensions ?? 1,
      maxInputTokens: raw.max_input_tokens ?? base?.maxInputTokens ?? 8_192,
      inputMicrosPerMillion: raw.price?.input ?? base?.inputMicrosPerMillion ?? 0,
      // A model with no deployments of its own is the simulator's, as the built-in ones are.
      deployments: deployments ??
        base?.deployments ?? [{ id: `simulator/${id}`, provider: 'simulator', upstreamModel: id }],
    });
  }
  return models;
}
