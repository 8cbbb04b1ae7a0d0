import type { ModelConfig, ProviderConfig } from './config.ts';
import { GatewayError } from './gateway-error.ts';
import type { ChatRequest } from './chat-types.ts';

/**
 * The most choices one chat request may ask for (`n`). OpenAI allows 128; every choice is held for at the
 * worst case (max_tokens each), so a large n holds a large amount for one request, and 8 covers the uses seen
 * (best-of sampling, a few drafts to pick from).
 */
export const MAX_CHOICES = 8;

/** Upstream types that answer `n` choices from one call (one prompt, billed once). */
const MANY_CHOICE_TYPES = new Set(['openai', 'simulator']);

/** `n` as the request asked it (validated: a whole number from 1 to MAX_CHOICES), or 1. */
export function choicesOf(request: Pick<ChatRequest, 'body'>): number {
  const n = request.body['n'];
  return typeof n === 'number' ? n : 1;
}

/** A 400 for a bad `n`; undefined for a good one. */
export function invalidChoices(n: unknown): GatewayError | undefined {
  if (n === undefined || n === null) return undefined;
  if (typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= MAX_CHOICES) return undefined;
  return new GatewayError('invalid_request', `n must be a whole number from 1 to ${MAX_CHOICES}`, {
    param: 'n',
  });
}

/**
 * A 400 naming the model when `n` > 1 could reach an upstream that answers one choice per call (Anthropic,
 * Gemini here): it would silently answer one, or bill the prompt once per choice. Its fallbacks count too.
 */
export function refuseChoicesFor(
  n: number,
  model: ModelConfig,
  models: ReadonlyMap<string, ModelConfig>,
  providers: ReadonlyMap<string, ProviderConfig>,
): void {
  if (n <= 1) return;
  for (const candidate of [model, ...model.fallbacks.map((id) => models.get(id))])
    for (const deployment of candidate?.deployments ?? []) {
      const type = providers.get(deployment.provider)?.type;
      if (type !== undefined && !MANY_CHOICE_TYPES.has(type))
        throw new GatewayError(
          'invalid_request',
          `n above 1 is not supported by ${model.id}: ${candidate!.id === model.id ? 'its' : `its fallback ${candidate!.id}'s`} upstream answers one choice per call`,
          { param: 'n' },
        );
    }
}
