import type { ProviderConfig, TimeoutsConfig } from '../core/config.ts';
import { ProviderError } from '../core/provider-error.ts';
import { createUpstreamClient, type UpstreamClient } from '../providers/upstream-http.ts';
import { simulatedEmbedding } from '../providers/simulator/simulated-embedding.ts';

/** One input of an embeddings request: a text, or (OpenAI's convention) the tokens of one. */
export type EmbeddingInput = { text: string } | { tokens: number[] };

export interface EmbedCall {
  inputs: readonly EmbeddingInput[];
  upstreamModel: string;
  /** The vectors' length: the request's `dimensions`, or the model's own. */
  dimensions: number;
  /** Whether the request asked for `dimensions` (sent upstream only then). */
  dimensionsAsked: boolean;
  signal: AbortSignal;
}

export interface Embedded {
  vectors: number[][];
  /** The input tokens the upstream reported, when it reports them (OpenAI does; Gemini does not). */
  promptTokens: number | undefined;
}

/** An upstream's embeddings endpoint, in its own wire format. */
export interface Embedder {
  embed(call: EmbedCall): Promise<Embedded>;
  close(): Promise<void>;
}

/** The embedder of a configured provider (only the simulator, OpenAI-compatible and Gemini types have one). */
export function createEmbedder(provider: ProviderConfig, timeouts: TimeoutsConfig): Embedder {
  if (provider.type === 'simulator') return simulatorEmbedder;
  const client = createUpstreamClient(provider.baseUrl, timeouts);
  if (provider.type === 'gemini') return geminiEmbedder(provider, client);
  return openaiEmbedder(provider, client);
}

const simulatorEmbedder: Embedder = {
  embed: async (call) => ({
    vectors: call.inputs.map((input) =>
      simulatedEmbedding('text' in input ? input.text : input.tokens.join(' '), call.dimensions),
    ),
    promptTokens: undefined,
  }),
  close: async () => {},
};

/** POST {base}/embeddings, the body passed on as OpenAI documents it (floats asked for: the door encodes). */
function openaiEmbedder(provider: ProviderConfig, client: UpstreamClient): Embedder {
  const headers: Record<string, string> = { ...provider.headers, 'content-type': 'application/json' };
  if (provider.apiKey) headers['authorization'] = `Bearer ${provider.apiKey}`;
  return {
    async embed(call) {
      const input = call.inputs.map((item) => ('text' in item ? item.text : item.tokens));
      const body: Record<string, unknown> = { model: call.upstreamModel, input, encoding_format: 'float' };
      if (call.dimensionsAsked) body['dimensions'] = call.dimensions;
      const answer = (await client.postJson('/embeddings', headers, JSON.stringify(body), call.signal)) as {
        data?: { index?: unknown; embedding?: unknown }[];
        usage?: { prompt_tokens?: unknown };
      } | null;
      const data = answer?.data;
      if (!Array.isArray(data) || data.length !== call.inputs.length)
        throw new ProviderError('protocol', 'upstream answer is not an embeddings list of the inputs');
      const vectors: number[][] = new Array<number[]>(data.length);
      for (const [position, item] of data.entries()) {
        const index = typeof item.index === 'number' ? item.index : position;
        if (!isVector(item.embedding) || index < 0 || index >= data.length)
          throw new ProviderError(
            'protocol',
            'upstream answer holds an embedding that is not a list of numbers',
          );
        vectors[index] = item.embedding;
      }
      const tokens = answer?.usage?.prompt_tokens;
      return { vectors, promptTokens: typeof tokens === 'number' ? tokens : undefined };
    },
    close: () => client.close(),
  };
}

/**
 * Gemini: `models/{model}:embedContent` for one text, `:batchEmbedContents` for several, with
 * `outputDimensionality` when the request set `dimensions`. Gemini takes text only, and reports no token count.
 */
function geminiEmbedder(provider: ProviderConfig, client: UpstreamClient): Embedder {
  const headers: Record<string, string> = { ...provider.headers, 'content-type': 'application/json' };
  if (provider.apiKey) headers['x-goog-api-key'] = provider.apiKey;
  return {
    async embed(call) {
      const model = encodeURIComponent(call.upstreamModel);
      const one = (input: EmbeddingInput): Record<string, unknown> => {
        const request: Record<string, unknown> = {
          model: `models/${call.upstreamModel}`,
          content: { parts: [{ text: 'text' in input ? input.text : '' }] },
        };
        if (call.dimensionsAsked) request['outputDimensionality'] = call.dimensions;
        return request;
      };
      let vectors: unknown[];
      if (call.inputs.length === 1) {
        const answer = (await client.postJson(
          `/models/${model}:embedContent`,
          headers,
          JSON.stringify(one(call.inputs[0]!)),
          call.signal,
        )) as { embedding?: { values?: unknown } } | null;
        vectors = [answer?.embedding?.values];
      } else {
        const answer = (await client.postJson(
          `/models/${model}:batchEmbedContents`,
          headers,
          JSON.stringify({ requests: call.inputs.map(one) }),
          call.signal,
        )) as { embeddings?: { values?: unknown }[] } | null;
        const embeddings = answer?.embeddings;
        if (!Array.isArray(embeddings) || embeddings.length !== call.inputs.length)
          throw new ProviderError(
            'protocol',
            'upstream answer is not a BatchEmbedContentsResponse of the inputs',
          );
        vectors = embeddings.map((embedding) => embedding?.values);
      }
      if (!vectors.every(isVector))
        throw new ProviderError(
          'protocol',
          'upstream answer holds an embedding that is not a list of numbers',
        );
      return { vectors, promptTokens: undefined };
    },
    close: () => client.close(),
  };
}

const isVector = (value: unknown): value is number[] =>
  Array.isArray(value) && value.length > 0 && value.every((item) => typeof item === 'number');
