import { z } from 'zod';
import { GATEWAY_PARAMS, type ParamPolicy } from '../core/config.ts';
import { DEFAULT_PARAM_POLICY } from './defaults.ts';
import { mapping, oneOf, optionalRecord, text, textList } from '../shared/schema-primitives.ts';

/** Ranges of the spec's sampling fields, for defaults an operator sets. */
const PARAM_RANGES: Readonly<Record<string, readonly [number, number]>> = {
  temperature: [0, 2],
  top_p: [0, 1],
  presence_penalty: [-2, 2],
  frequency_penalty: [-2, 2],
};

const gatewayOwned = (name: string): string => `${name} is set by the gateway; a policy cannot change it`;

/** A client field a policy may name: not one of the gateway's own. */
const paramName = text().refine((name) => !GATEWAY_PARAMS.includes(name), {
  error: (issue) => gatewayOwned(String(issue.input)),
});

/**
 * A deployment's `params:` (README "What each upstream accepts"). Order: deny, allow-list, drop, rename,
 * defaults; the spec's temperature default is kept unless overridden, dropped or not allowed.
 */
export const PARAM_POLICY_SCHEMA: z.ZodType<ParamPolicy, unknown> = mapping({
  defaults: optionalRecord(z.unknown()),
  drop: textList(paramName).optional(),
  rename: optionalRecord(text()),
  deny: textList(paramName).optional(),
  allow: textList(paramName).optional(),
  unlisted: oneOf(['refuse', 'drop']).optional(),
}).transform((raw, context): ParamPolicy => {
  const problem = (path: string[], message: string): void =>
    context.addIssue({ code: 'custom', path, message });
  const drop = raw.drop ?? [];
  const allow = raw.allow === undefined ? null : new Set(raw.allow);
  const rename = Object.entries(raw.rename).map(([from, to]) => {
    if (GATEWAY_PARAMS.includes(from)) problem(['rename', from], gatewayOwned(from));
    if (GATEWAY_PARAMS.includes(to)) problem(['rename', from], gatewayOwned(to));
    if (from === to) problem(['rename', from], 'renames a field to itself');
    return [from, to] as const;
  });
  const defaults: (readonly [string, unknown])[] = Object.entries(raw.defaults).map(([field, fallback]) => {
    if (GATEWAY_PARAMS.includes(field)) problem(['defaults', field], gatewayOwned(field));
    if (fallback === null || fallback === undefined) problem(['defaults', field], 'must have a value');
    const range = PARAM_RANGES[field];
    if (range && (typeof fallback !== 'number' || fallback < range[0] || fallback > range[1]))
      problem(['defaults', field], `must be a number from ${range[0]} to ${range[1]}`);
    return [field, fallback] as const;
  });
  for (const field of raw.deny ?? []) {
    if (drop.includes(field)) problem(['deny'], `${field} is in drop too; choose one`);
    if (allow?.has(field)) problem(['deny'], `${field} is in allow too; choose one`);
  }
  const denied = new Set(raw.deny ?? []);
  for (const [field] of defaults) {
    if (drop.includes(field) || denied.has(field))
      problem(['defaults', field], 'a default for a field this deployment drops or denies');
  }
  if (raw.unlisted !== undefined && !allow) problem(['unlisted'], 'only with allow');
  if (context.issues.length > 0) return z.NEVER;
  // The built-in list yields to an explicit choice: a field the operator drops, renames or allows is not denied.
  const deny =
    raw.deny ??
    DEFAULT_PARAM_POLICY.deny.filter(
      (field) => !drop.includes(field) && !allow?.has(field) && !rename.some(([from]) => from === field),
    );
  const temperatureSent =
    !drop.includes('temperature') &&
    !deny.includes('temperature') &&
    (allow === null || allow.has('temperature'));
  if (temperatureSent && !defaults.some(([field]) => field === 'temperature'))
    defaults.unshift(DEFAULT_PARAM_POLICY.defaults[0]!);
  return Object.freeze({ deny, allow, unlisted: raw.unlisted ?? 'refuse', drop, rename, defaults });
});
