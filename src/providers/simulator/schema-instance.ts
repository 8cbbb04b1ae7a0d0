/**
 * A deterministic instance of a JSON Schema: what the simulator answers for `response_format: json_schema`
 * and for a tool call's arguments. It covers what the SDKs' helpers emit (zod's `toJSONSchema`, the
 * `openai` SDK's `zodResponseFormat`, pydantic's `model_json_schema`): objects, arrays, enums, `const`,
 * `anyOf`/`oneOf`/`allOf`, `$ref` into `$defs`/`definitions` (recursive ones end at a depth limit), type
 * lists such as `["string","null"]`, and the common bounds (`minItems`, `minLength`, `minimum`, formats).
 * Pure: no I/O, no randomness; the same schema gives the same value ("example", 1, true, the first enum value).
 *
 * The schema comes from any caller and runs on the event loop, so generation is budgeted: a bounded amount of
 * work, a bounded output, bounded nesting. A schema whose instance does not fit (an array of a billion items, a
 * string of 100 MB, a required property that refers to itself, a `$ref` cycle) throws SchemaBudgetError before
 * the work is done, rather than freezing the process or overflowing the stack.
 */
import { isObject, type JsonObject } from '../../core/json.ts';

type Schema = JsonObject;

/** How deep objects and arrays nest before the generator takes the shortest way out (null, [], required only). */
const SOFT_DEPTH = 8;
/** Nesting no instance passes: a schema that needs more has no finite instance the simulator makes. */
export const MAX_INSTANCE_DEPTH = 32;
/** Steps through `$ref`, `allOf` and `anyOf` nested in one another: bounds the stack whatever the schema. */
const MAX_CHAIN = 256;
/** A `$ref` longer than this resolves to nothing: no pointer a schema needs is this long. */
const MAX_REF_CHARS = 1_024;

export interface SchemaBudget {
  /** Units of work: one per value generated, per schema key copied while merging, per property visited. */
  work: number;
  /** Characters of the instance as JSON (estimated while generating; the exact length is close). */
  chars: number;
}

/** Tens of milliseconds' work at most on a slow machine; far more than any schema an SDK emits needs. */
export const SCHEMA_BUDGET: Readonly<SchemaBudget> = { work: 50_000, chars: 65_536 };

/** The schema asks for an instance larger or deeper than the budget allows (the request's fault). */
export class SchemaBudgetError extends Error {
  override name = 'SchemaBudgetError';
}

export function schemaInstance(schema: unknown, budget: Readonly<SchemaBudget> = SCHEMA_BUDGET): unknown {
  const root = isObject(schema) ? schema : {};
  return new Builder(root, budget).generate(root, 0, 0, undefined);
}

/** The `$ref`s being expanded on the current path, innermost first. */
interface RefPath {
  ref: string;
  next: RefPath | undefined;
}

class Builder {
  readonly #root: Schema;
  readonly #budget: Readonly<SchemaBudget>;
  readonly #resolved = new Map<string, Schema | undefined>();
  #work: number;
  #chars: number;

  constructor(root: Schema, budget: Readonly<SchemaBudget>) {
    this.#root = root;
    this.#budget = budget;
    this.#work = budget.work;
    this.#chars = budget.chars;
  }

  /** `depth`: objects and arrays around this value; `chain`: generate calls around it (any kind). */
  generate(schema: Schema, depth: number, chain: number, path: RefPath | undefined): unknown {
    this.#spend(Array.isArray(schema['type']) ? 1 + schema['type'].length : 1);
    if (chain > MAX_CHAIN)
      throw new SchemaBudgetError(`its $ref, allOf and anyOf chains nest more than ${MAX_CHAIN} deep`);
    if (depth > MAX_INSTANCE_DEPTH)
      throw new SchemaBudgetError(
        `it has no instance nested at most ${MAX_INSTANCE_DEPTH} levels deep (a required property that refers to itself?)`,
      );
    if ('const' in schema) return this.#literal(schema['const']);
    if (Array.isArray(schema['enum']) && schema['enum'].length > 0) return this.#literal(schema['enum'][0]);

    const ref = schema['$ref'];
    if (typeof ref === 'string') {
      const target = this.#resolve(ref);
      if (!target) return this.#literal(null);
      const merged = this.#merge(target, withoutKey(schema, '$ref'));
      const inner = { ref, next: path };
      this.#spend(chain);
      if (onPath(path, ref) && depth >= SOFT_DEPTH / 2)
        return this.#shortest(merged, depth, chain + 1, inner);
      return this.generate(merged, depth, chain + 1, inner);
    }

    const allOf = schema['allOf'];
    if (Array.isArray(allOf) && allOf.length > 0) {
      let merged: Schema = withoutKey(schema, 'allOf');
      for (const part of allOf) {
        if (!isObject(part)) continue;
        const resolved = typeof part['$ref'] === 'string' ? (this.#resolve(part['$ref']) ?? {}) : part;
        merged = this.#merge(merged, resolved);
      }
      return this.generate(merged, depth, chain + 1, path);
    }

    const variants = schema['anyOf'] ?? schema['oneOf'];
    if (Array.isArray(variants) && variants.length > 0) {
      const options = variants.filter(isObject);
      this.#spend(variants.length);
      const nonNull = options.filter((option) => option['type'] !== 'null');
      const rest = withoutKey(withoutKey(schema, 'anyOf'), 'oneOf');
      if (options.length === 0 || (depth >= SOFT_DEPTH && nonNull.length < options.length))
        return this.#literal(null);
      return this.generate(this.#merge(rest, nonNull[0] ?? options[0]!), depth, chain + 1, path);
    }
    return this.#typed(schema, depth, chain, path);
  }

  #typed(schema: Schema, depth: number, chain: number, path: RefPath | undefined): unknown {
    switch (typeOf(schema)) {
      case 'null':
        return this.#literal(null);
      case 'boolean':
        return this.#literal(true);
      case 'integer':
        return this.#literal(integerIn(schema));
      case 'number':
        return this.#literal(numberIn(schema));
      case 'array':
        return this.#array(schema, depth, chain, path);
      case 'object':
        return this.#object(schema, depth, chain, path);
      default:
        return this.#string(schema);
    }
  }

  /** The value that ends a recursion soonest: null when allowed, an empty array, an object's required part. */
  #shortest(schema: Schema, depth: number, chain: number, path: RefPath): unknown {
    const variants = schema['anyOf'] ?? schema['oneOf'];
    if (Array.isArray(variants)) this.#spend(variants.length);
    if (Array.isArray(variants) && variants.some((v) => isObject(v) && v['type'] === 'null'))
      return this.#literal(null);
    const type = schema['type'];
    if (Array.isArray(type) && type.includes('null')) return this.#literal(null);
    if (typeOf(schema) === 'array' && !(Number(schema['minItems']) > 0)) return this.#literal([]);
    // Never shallower than where it is: the depth only grows, so a recursion that cannot end reaches the limit.
    return this.generate(schema, Math.max(depth, SOFT_DEPTH), chain, path);
  }

  #object(schema: Schema, depth: number, chain: number, path: RefPath | undefined): Record<string, unknown> {
    const properties = isObject(schema['properties']) ? schema['properties'] : {};
    const required = Array.isArray(schema['required'])
      ? schema['required'].filter((key): key is string => typeof key === 'string')
      : [];
    this.#spend(required.length);
    // Every property while shallow (a strict schema requires all anyway), only the required ones when deep.
    const names = depth >= SOFT_DEPTH ? required : Object.keys(properties);
    this.#spend(names.length);
    const keys = depth >= SOFT_DEPTH ? new Set(required) : new Set([...names, ...required]);
    const result: Record<string, unknown> = {};
    this.#write(2);
    for (const key of keys) {
      this.#write(key.length + 4);
      const property = Object.hasOwn(properties, key) ? properties[key] : undefined;
      const value = this.generate(isObject(property) ? property : {}, depth + 1, chain + 1, path);
      Object.defineProperty(result, key, { value, enumerable: true, writable: true, configurable: true });
    }
    return result;
  }

  #array(schema: Schema, depth: number, chain: number, path: RefPath | undefined): unknown[] {
    const prefix: unknown[] = Array.isArray(schema['prefixItems']) ? schema['prefixItems'] : [];
    const items = isObject(schema['items']) ? schema['items'] : {};
    const min = nonNegative(schema['minItems']) ?? 0;
    const max = nonNegative(schema['maxItems']) ?? Number.POSITIVE_INFINITY;
    const wanted = depth >= SOFT_DEPTH ? min : Math.max(min, Math.min(prefix.length, this.#work), 1);
    const count = Math.min(wanted, max);
    // Each item is a value and at least two characters: an array no budget holds is refused before it is begun.
    if (count > this.#budget.work || count * 2 > this.#budget.chars)
      throw new SchemaBudgetError(`an array of at least ${count} items`);
    this.#write(2);
    const result: unknown[] = [];
    for (let index = 0; index < count; index++) {
      const given = prefix[index];
      const item = isObject(given) ? given : items;
      this.#write(1);
      result.push(this.generate(item, depth + 1, chain + 1, path));
    }
    return result;
  }

  #string(schema: Schema): string {
    const name = schema['format'];
    // Own keys only: `constructor` or `__proto__` as a format must not reach Object's prototype.
    const format = typeof name === 'string' && Object.hasOwn(FORMATS, name) ? FORMATS[name] : undefined;
    if (format) return this.#literal(format);
    const min = nonNegative(schema['minLength']) ?? 0;
    const max = nonNegative(schema['maxLength']);
    if (min > this.#budget.chars) throw new SchemaBudgetError(`a string of at least ${min} characters`);
    let text = min > 7 ? `example${' example'.repeat(Math.ceil((min - 7) / 8))}` : 'example';
    if (max !== undefined) text = text.slice(0, max);
    return this.#literal(text.length < min ? text.padEnd(min, 'x') : text);
  }

  /** A value taken from the schema as it is (`const`, an enum's first, a default): counted by its size. */
  #literal<T>(value: T): T {
    if (typeof value === 'string') this.#write(value.length + 2);
    else if (typeof value === 'object' && value !== null) this.#write(JSON.stringify(value).length);
    else this.#write(6);
    return value;
  }

  #spend(units: number): void {
    this.#work -= units;
    if (this.#work < 0) throw new SchemaBudgetError(`it takes more than ${this.#budget.work} steps to fill`);
  }

  #write(chars: number): void {
    this.#chars -= chars;
    if (this.#chars < 0)
      throw new SchemaBudgetError(`its instance is longer than ${this.#budget.chars} characters`);
  }

  /** A schema's keys with another's over them (their properties and required lists joined), counted as work. */
  #merge(a: Schema, b: Schema): Schema {
    this.#spend(Object.keys(a).length + Object.keys(b).length);
    const merged: Schema = { ...a, ...b };
    if (isObject(a['properties']) && isObject(b['properties'])) {
      this.#spend(Object.keys(a['properties']).length + Object.keys(b['properties']).length);
      merged['properties'] = { ...a['properties'], ...b['properties'] };
    }
    if (Array.isArray(a['required']) && Array.isArray(b['required'])) {
      this.#spend(a['required'].length + b['required'].length);
      merged['required'] = [...(a['required'] as unknown[]), ...(b['required'] as unknown[])];
    }
    return merged;
  }

  /** A local JSON pointer (`#`, `#/$defs/Name`, `#/definitions/Name`, `#/properties/a/items`), resolved once. */
  #resolve(ref: string): Schema | undefined {
    this.#spend(1 + (ref.length >> 6));
    if (this.#resolved.has(ref)) return this.#resolved.get(ref);
    const target = ref.length <= MAX_REF_CHARS ? resolvePointer(this.#root, ref) : undefined;
    this.#resolved.set(ref, target);
    return target;
  }
}

function onPath(path: RefPath | undefined, ref: string): boolean {
  for (let at = path; at !== undefined; at = at.next) if (at.ref === ref) return true;
  return false;
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

function nonNegative(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}

/** Walks a local pointer through the root's own keys; anything malformed resolves to nothing. */
function resolvePointer(root: Schema, ref: string): Schema | undefined {
  if (!ref.startsWith('#')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(1).split('/').slice(1)) {
    let key: string;
    try {
      key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    } catch {
      return undefined;
    }
    if (isObject(node)) node = Object.hasOwn(node, key) ? node[key] : undefined;
    else if (Array.isArray(node)) node = (node as unknown[])[Number(key)];
    else return undefined;
  }
  return isObject(node) ? node : undefined;
}

function withoutKey(schema: Schema, key: string): Schema {
  if (!(key in schema)) return schema;
  const copy = { ...schema };
  delete copy[key];
  return copy;
}
