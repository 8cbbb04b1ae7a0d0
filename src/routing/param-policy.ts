import type { ParamPolicy } from '../config/config.ts';
import { GATEWAY_PARAMS } from '../config/defaults.ts';
import type { ChatRequest } from '../gateway/chat-types.ts';
import { GatewayError } from '../shared/gateway-error.ts';

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
 * a few property reads. The typed `temperature` follows the body (undefined when not sent upstream).
 */
export function applyParamPolicy(request: ChatRequest, policy: ParamPolicy): ChatRequest | GatewayError {
  const body = request.body;
  for (const field of policy.deny) if (asksFor(field, body[field])) return refuse(field, request.model);
  let shaped: Record<string, unknown> | undefined;
  const edit = (): Record<string, unknown> => (shaped ??= { ...body });
  if (policy.allow) {
    for (const field of Object.keys(body)) {
      if (GATEWAY_OWN.has(field) || policy.allow.has(field)) continue;
      if (policy.rename.some(([from]) => from === field)) continue;
      if (policy.unlisted === 'refuse' && isSet(body[field])) return refuse(field, request.model);
      delete edit()[field];
    }
  }
  for (const field of policy.drop) if (Object.hasOwn(shaped ?? body, field)) delete edit()[field];
  for (const [from, to] of policy.rename) {
    if (!Object.hasOwn(shaped ?? body, from)) continue;
    const target = edit();
    if (!isSet(target[to])) target[to] = target[from];
    delete target[from];
  }
  for (const [field, value] of policy.defaults) if (!isSet((shaped ?? body)[field])) edit()[field] = value;
  const sent = (shaped ?? body)['temperature'];
  const temperature = typeof sent === 'number' ? sent : undefined;
  if (!shaped && temperature === request.temperature) return request;
  return { ...request, body: shaped ?? body, temperature };
}
