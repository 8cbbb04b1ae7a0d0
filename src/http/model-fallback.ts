import { GatewayError } from '../core/gateway-error.ts';

/** The most models one request may list in `models`. */
export const MAX_FALLBACK_MODELS = 8;

/**
 * OpenRouter's request-level fallbacks (`models: ["a", "b"]`, which Vercel's AI Gateway also takes on its
 * OpenAI-compatible endpoint): the models to try in order, `model` first when both are given; undefined when the
 * body lists none. Each is a whole request of its own (validated, held, billed at its model's price).
 */
export function fallbackModels(body: unknown): string[] | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const fields = body as Record<string, unknown>;
  const models = fields['models'];
  if (models === undefined || models === null) return undefined;
  if (
    !Array.isArray(models) ||
    models.length === 0 ||
    !models.every((id) => typeof id === 'string' && id !== '')
  )
    throw new GatewayError('invalid_request', 'models must be a non-empty array of model ids', {
      param: 'models',
    });
  const first = typeof fields['model'] === 'string' && fields['model'] !== '' ? [fields['model']] : [];
  const ordered = [...new Set([...first, ...(models as string[])])];
  if (ordered.length > MAX_FALLBACK_MODELS)
    throw new GatewayError('invalid_request', `models may list at most ${MAX_FALLBACK_MODELS} models`, {
      param: 'models',
    });
  return ordered;
}

/** The body as a request for one of its models: `model` set, `models` taken out. */
export function withModel(body: unknown, model: string): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...(body as Record<string, unknown>), model };
  delete copy['models'];
  return copy;
}

/** Failures another model may not meet: the upstream's (502, 503), or a model this key may not use. */
export const triesNextModel = (error: unknown): boolean =>
  error instanceof GatewayError &&
  (error.code === 'provider_error' ||
    error.code === 'service_unavailable' ||
    error.code === 'model_not_found');
