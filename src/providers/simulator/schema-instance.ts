/**
 * A deterministic instance of a JSON Schema: what the simulator answers for `response_format: json_schema`
 * and for a tool call's arguments. It covers what the SDKs' helpers emit (zod's `toJSONSchema`, the
 * `openai` SDK's `zodResponseFormat`, pydantic's `model_json_schema`): objects, arrays, enums, `const`,
 * `anyOf`/`oneOf`/`allOf`, `$ref` into `$defs`/`definitions` (recursive ones end at a depth limit), type
 * lists such as `["string","null"]`, and the common bounds (`minItems`, `minLength`, `minimum`, formats).
 * Pure: no I/O, no randomness; the same schema gives the same value ("example", 1, true, the first enum value).
 */

type Schema = Record<string, unknown>;

/** How deep objects and arrays nest before the generator takes the shortest way out (null, [], required only). */
const MAX_DEPTH = 8;

const isObject = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function schemaInstance(schema: unknown): unknown {
  const root = isObject(schema) ? schema : {};
  return generate(root, { root, refs: [] }, 0);
}

interface Context {
  root: Schema;
  /** $refs being expanded on the current path: a recursive one is cut short when met again deep down. */
  refs: string[];
}

function generate(schema: Schema, context: Context, depth: number): unknown {
  if (depth > MAX_DEPTH * 3) return null; // only a schema no finite value satisfies gets this far
  if ('const' in schema) return schema['const'];
  if (Array.isArray(schema['enum']) && schema['enum'].length > 0) return schema['enum'][0] as unknown;

  const ref = schema['$ref'];
  if (typeof ref === 'string') {
    const target = resolveRef(context.root, ref);
    if (!target) return null;
    const merged = { ...target, ...withoutKey(schema, '$ref') };
    const cycles = context.refs.filter((seen) => seen === ref).length;
    if (cycles > 0 && depth >= MAX_DEPTH / 2) return shortest(merged, context);
    return generate(merged, { ...context, refs: [...context.refs, ref] }, depth);
  }

  const allOf = schema['allOf'];
  if (Array.isArray(allOf) && allOf.length > 0) {
    let merged: Schema = withoutKey(schema, 'allOf');
    for (const part of allOf) {
      if (!isObject(part)) continue;
      const resolved =
        typeof part['$ref'] === 'string' ? (resolveRef(context.root, part['$ref']) ?? {}) : part;
      merged = mergeSchemas(merged, resolved);
    }
    return generate(merged, context, depth);
  }

  const variants = schema['anyOf'] ?? schema['oneOf'];
  if (Array.isArray(variants) && variants.length > 0) {
    const options = variants.filter(isObject);
    const nonNull = options.filter((option) => option['type'] !== 'null');
    const rest = withoutKey(withoutKey(schema, 'anyOf'), 'oneOf');
    if (depth >= MAX_DEPTH && nonNull.length < options.length) return null;
    const chosen = nonNull[0] ?? options[0]!;
    return generate({ ...rest, ...chosen }, context, depth);
  }

  switch (typeOf(schema)) {
    case 'null':
      return null;
    case 'boolean':
      return true;
    case 'integer':
      return integerIn(schema);
    case 'number':
      return numberIn(schema);
    case 'string':
      return stringFor(schema);
    case 'array':
      return arrayOf(schema, context, depth);
    case 'object':
      return objectOf(schema, context, depth);
    default:
      return stringFor(schema);
  }
}

/** The value that ends a recursion soonest: null when allowed, an empty array, an object's required part. */
function shortest(schema: Schema, context: Context): unknown {
  const variants = schema['anyOf'] ?? schema['oneOf'];
  if (Array.isArray(variants) && variants.some((v) => isObject(v) && v['type'] === 'null')) return null;
  const type = schema['type'];
  if (Array.isArray(type) && type.includes('null')) return null;
  if (typeOf(schema) === 'array' && !(Number(schema['minItems']) > 0)) return [];
  return generate(schema, context, MAX_DEPTH);
}

function typeOf(schema: Schema): string | undefined {
  const type = schema['type'];
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) {
    const types = type as unknown[];
    const first = types.find((item) => item !== 'null') ?? types[0];
    return typeof first === 'string' ? first : undefined;
  }
  if (isObject(schema['properties']) || schema['additionalProperties'] !== undefined) return 'object';
  if (schema['items'] !== undefined || schema['prefixItems'] !== undefined) return 'array';
  return undefined;
}

function objectOf(schema: Schema, context: Context, depth: number): Record<string, unknown> {
  const properties = isObject(schema['properties']) ? schema['properties'] : {};
  const required = Array.isArray(schema['required'])
    ? schema['required'].filter((key): key is string => typeof key === 'string')
    : [];
  // Every property while shallow (a strict schema requires all anyway), only the required ones when deep.
  const keys = depth >= MAX_DEPTH ? required : [...new Set([...Object.keys(properties), ...required])];
  const result: Record<string, unknown> = {};
  for (const key of keys) {
    const property = properties[key];
    result[key] = generate(isObject(property) ? property : {}, context, depth + 1);
  }
  return result;
}

function arrayOf(schema: Schema, context: Context, depth: number): unknown[] {
  const prefix = Array.isArray(schema['prefixItems']) ? schema['prefixItems'].filter(isObject) : [];
  const items = isObject(schema['items']) ? schema['items'] : {};
  const min = nonNegative(schema['minItems']) ?? 0;
  const max = nonNegative(schema['maxItems']) ?? Number.POSITIVE_INFINITY;
  const wanted = depth >= MAX_DEPTH ? min : Math.max(min, prefix.length, 1);
  const count = Math.min(wanted, max);
  const result: unknown[] = [];
  for (let index = 0; index < count; index++) {
    const item = prefix[index] ?? items;
    result.push(generate(item, context, depth + 1));
  }
  return result;
}

function integerIn(schema: Schema): number {
  const { low, high } = bounds(schema, true);
  let value = Math.min(Math.max(1, low), high);
  const step = Number(schema['multipleOf']);
  if (Number.isInteger(step) && step > 0) value = Math.ceil(value / step) * step;
  return Math.trunc(value);
}

function numberIn(schema: Schema): number {
  const { low, high } = bounds(schema, false);
  let value = Math.min(Math.max(1, low), high);
  const step = Number(schema['multipleOf']);
  if (Number.isFinite(step) && step > 0) value = Math.ceil(value / step) * step;
  return value;
}

function bounds(schema: Schema, integer: boolean): { low: number; high: number } {
  const epsilon = integer ? 1 : 0.5;
  let low = Number.NEGATIVE_INFINITY;
  let high = Number.POSITIVE_INFINITY;
  if (typeof schema['minimum'] === 'number') low = schema['minimum'];
  if (typeof schema['exclusiveMinimum'] === 'number')
    low = Math.max(low, schema['exclusiveMinimum'] + epsilon);
  if (typeof schema['maximum'] === 'number') high = schema['maximum'];
  if (typeof schema['exclusiveMaximum'] === 'number')
    high = Math.min(high, schema['exclusiveMaximum'] - epsilon);
  if (integer) {
    low = Math.ceil(low);
    high = Math.floor(high);
  }
  return { low, high };
}

const FORMATS: Record<string, string> = {
  'date-time': '2026-01-01T00:00:00Z',
  date: '2026-01-01',
  time: '00:00:00',
  email: 'user@example.com',
  uri: 'https://example.com/',
  url: 'https://example.com/',
  uuid: '00000000-0000-4000-8000-000000000000',
  ipv4: '192.0.2.1',
  ipv6: '2001:db8::1',
  hostname: 'example.com',
  duration: 'PT1M',
};

function stringFor(schema: Schema): string {
  const format = typeof schema['format'] === 'string' ? FORMATS[schema['format']] : undefined;
  if (format) return format;
  let text = 'example';
  const min = nonNegative(schema['minLength']) ?? 0;
  const max = nonNegative(schema['maxLength']);
  while (text.length < min) text += ' example';
  if (max !== undefined) text = text.slice(0, max);
  return text.length < min ? text.padEnd(min, 'x') : text;
}

function nonNegative(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}

/** A local JSON pointer (`#`, `#/$defs/Name`, `#/definitions/Name`, `#/properties/a/items`) in the root. */
function resolveRef(root: Schema, ref: string): Schema | undefined {
  if (!ref.startsWith('#')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(1).split('/').slice(1)) {
    const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    node = isObject(node) ? node[key] : Array.isArray(node) ? (node as unknown[])[Number(key)] : undefined;
  }
  return isObject(node) ? node : undefined;
}

function withoutKey(schema: Schema, key: string): Schema {
  if (!(key in schema)) return schema;
  const copy = { ...schema };
  delete copy[key];
  return copy;
}

function mergeSchemas(a: Schema, b: Schema): Schema {
  const merged: Schema = { ...a, ...b };
  if (isObject(a['properties']) && isObject(b['properties']))
    merged['properties'] = { ...a['properties'], ...b['properties'] };
  if (Array.isArray(a['required']) && Array.isArray(b['required']))
    merged['required'] = [...(a['required'] as unknown[]), ...(b['required'] as unknown[])];
  return merged;
}
