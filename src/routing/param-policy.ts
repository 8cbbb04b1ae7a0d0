import { GATEWAY_PARAMS, type ParamPolicy } from '../core/config.ts';
import type { ChatRequest } from '../gateway/chat-types.ts';
import { GatewayError } from '../core/gateway-error.ts';

const GATEWAY_OWN: ReadonlySet<string> = new Set(GATEWAY_PARAMS);

/** A JSON null is "not set" for OpenAI-convention clients, as an absent field is. */
const isSet = (value: unknown): boolean => value !== undefined && value !== null;

/** Values of deniable fields that ask for nothing beyond the standard service: a deny lets them through. */
const ASKS_NOTHING: Readonly<Record<string, (value: unknown) => boolean>> = {
  store: (value) => value === false,
  service_tier: (value) => value === 'default',
  modalities: (value) => Array.isArray(value) && value.length === 1 && value[0] === 'text',
};

const asksFor = (field: string, value: unknown): boolean =>
  isSet(value) && !(ASKS_NOTHING[field]?.(value) ?? false);

const refuse = (field: string, model: string): GatewayError =>
  new GatewayError(
    'invalid_request',
    `${field} is not accepted for ${model}: the operator's policy for this model refuses it; remove it from the request`,
    { param: field },
  );

/**
 * Shapes a request for one deployment: refuses denied fields (a GatewayError naming the field, returned, not
 * thrown, so the router can try a deployment that accepts it), then applies the allow-list, drops, renames
 * and defaults. Pure; copies the body only when something changes, so a request the policy leaves alone costs
 * a few property reads. A field taken out is set to undefined, which JSON leaves out, rather than deleted,
 * which would slow the copy down for the serialiser. The typed `temperature` follows the body.
 */
export function applyParamPolicy(request: ChatRequest, policy: ParamPolicy): ChatRequest | GatewayError {
  const { deny, allow, drop, rename, defaults } = policy;
  const body = request.body;
  for (let i = 0; i < deny.length; i++) {
    const field = deny[i]!;
    if (asksFor(field, body[field])) return refuse(field, request.model);
  }
  let shaped: Record<string, unknown> | undefined;
  if (allow) {
    for (const field of Object.keys(body)) {
      if (GATEWAY_OWN.has(field) || allow.has(field) || body[field] === undefined) continue;
      if (rename.some(([from]) => from === field)) continue;
      if (policy.unlisted === 'refuse' && isSet(body[field])) return refuse(field, request.model);
      (shaped ??= { ...body })[field] = undefined;
    }
  }
  for (let i = 0; i < drop.length; i++) {
    const field = drop[i]!;
    if ((shaped ?? body)[field] !== undefined) (shaped ??= { ...body })[field] = undefined;
  }
  for (let i = 0; i < rename.length; i++) {
    const [from, to] = rename[i]!;
    const value = (shaped ?? body)[from];
    if (value === undefined) continue;
    shaped ??= { ...body };
    if (!isSet(shaped[to])) shaped[to] = value;
    shaped[from] = undefined;
  }
  for (let i = 0; i < defaults.length; i++) {
    const [field, value] = defaults[i]!;
    if (!isSet((shaped ?? body)[field])) (shaped ??= { ...body })[field] = value;
  }
  const sent = (shaped ?? body)['temperature'];
  const temperature = typeof sent === 'number' ? sent : undefined;
  if (!shaped && temperature === request.temperature) return request;
  return { ...request, body: shaped ?? body, temperature };
}
