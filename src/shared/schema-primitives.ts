import { z } from 'zod';
import { usdToMicros } from '../core/money.ts';

/**
 * The building blocks of the configuration's schemas (zod, docs/decisions.md), each with the one message an
 * operator reads after the field's path: `models.model-b.price.input: must be a non-negative number of USD`.
 */

const MAPPING = 'must be a mapping';

/** A non-empty string. */
export function text(): z.ZodString {
  return z.string({ error: 'must be a non-empty string' }).min(1, { error: 'must be a non-empty string' });
}

/** A list of non-empty strings. */
export function textList(item: z.ZodType<string> = text()): z.ZodArray<z.ZodType<string>> {
  return z.array(item, { error: 'must be a list' });
}

/** A whole number from min to max; a string of digits counts (environment variables, quoted YAML). */
export function wholeNumber(min = 0, max = Number.MAX_SAFE_INTEGER): z.ZodType<number, unknown> {
  const message = `must be a whole number from ${min} to ${max}`;
  return z.preprocess(
    (value) => (typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value),
    z.int({ error: message }).min(min, { error: message }).max(max, { error: message }),
  );
}

/** A price in USD (per million tokens, or per month), as integer micro-USD. */
export function usdAsMicros(): z.ZodType<number, unknown> {
  const message = 'must be a non-negative number of USD';
  return z.number({ error: message }).min(0, { error: message }).transform(usdToMicros);
}

/** A mapping with exactly these keys (an unknown key is an error naming it). */
export function mapping<Shape extends z.ZodRawShape>(shape: Shape): z.ZodObject<Shape, z.core.$strict> {
  return z.strictObject(shape, {
    error: (issue) => (issue.code === 'invalid_type' ? MAPPING : undefined),
  });
}

/** A mapping that may be left out or empty (`key:` with nothing after it is null in YAML): its defaults apply. */
export function optionalMapping<Shape extends z.ZodRawShape>(
  shape: Shape,
): z.ZodType<z.output<z.ZodObject<Shape, z.core.$strict>>, unknown> {
  return z.preprocess((value) => value ?? {}, mapping(shape));
}

/** Any mapping of names to values, left out or null meaning empty. */
export function optionalRecord<Value extends z.ZodType>(
  value: Value,
): z.ZodType<Record<string, z.output<Value>>, unknown> {
  return z.preprocess(
    (raw) => raw ?? {},
    z.record(z.string(), value, { error: (issue) => (issue.code === 'invalid_type' ? MAPPING : undefined) }),
  );
}

/** One of a few words, named in the message. */
export function oneOf<const Values extends readonly [string, ...string[]]>(
  values: Values,
): z.ZodEnum<{ [Key in Values[number]]: Key }> {
  return z.enum(values, { error: `must be one of ${values.join(', ')}` });
}

/** `models.model-b.deployments[0].provider`: the path of a field as the operator's YAML spells it. */
export function fieldPath(path: readonly PropertyKey[]): string {
  return path
    .map((key, index) => (typeof key === 'number' ? `[${key}]` : `${index === 0 ? '' : '.'}${String(key)}`))
    .join('');
}

/** The first problem zod found, as one line naming the field: what start-up prints before it stops. */
export function describeIssue(issue: z.core.$ZodIssue): string {
  const at = fieldPath(issue.path);
  if (issue.code === 'unrecognized_keys')
    return `${fieldPath([...issue.path, issue.keys[0] ?? ''])}: unknown field`;
  return at ? `${at}: ${issue.message}` : issue.message;
}
