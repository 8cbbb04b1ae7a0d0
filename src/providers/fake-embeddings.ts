import type { ServerResponse } from 'node:http';
import { simulatedEmbedding } from './simulator/simulated-embedding.ts';

/**
 * Embeddings answers of the fake upstreams, in each provider's documented wire format. Vectors come from the
 * simulator's hashing (so similarity checks hold through a fake too) at a length of the fake's own, and the
 * OpenAI fake reports a token count of its own (one per character), so a test can tell upstream usage from
 * Tollgate's own count.
 */
export const FAKE_EMBEDDING_DIMENSIONS = 64;

/** OpenAI's POST /v1/embeddings: `{object: list, data: [{object: embedding, index, embedding}], model, usage}`. */
export function serveOpenAIEmbeddings(body: any, response: ServerResponse): void {
  const inputs: unknown[] =
    typeof body.input === 'string' || (Array.isArray(body.input) && typeof body.input[0] === 'number')
      ? [body.input]
      : body.input;
  const dimensions = typeof body.dimensions === 'number' ? body.dimensions : FAKE_EMBEDDING_DIMENSIONS;
  let tokens = 0;
  const data = inputs.map((input, index) => {
    const text = typeof input === 'string' ? input : (input as number[]).join(' ');
    tokens += typeof input === 'string' ? input.length : (input as number[]).length;
    const vector = simulatedEmbedding(text, dimensions);
    const embedding =
      body.encoding_format === 'base64'
        ? Buffer.from(new Float32Array(vector).buffer).toString('base64')
        : vector;
    return { object: 'embedding', index, embedding };
  });
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(
    JSON.stringify({
      object: 'list',
      data,
      model: body.model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    }),
  );
}

/** Gemini's `:embedContent` (`{embedding: {values}}`) and `:batchEmbedContents` (`{embeddings: [{values}]}`). */
export function serveGeminiEmbeddings(method: string, body: any, response: ServerResponse): void {
  const embed = (request: any): { values: number[] } => {
    const text = (request.content?.parts ?? []).map((part: any) => part.text ?? '').join('');
    return { values: simulatedEmbedding(text, request.outputDimensionality ?? FAKE_EMBEDDING_DIMENSIONS) };
  };
  response.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
  response.end(
    JSON.stringify(
      method === 'embedContent'
        ? { embedding: embed(body) }
        : { embeddings: (body.requests ?? []).map(embed) },
    ),
  );
}
