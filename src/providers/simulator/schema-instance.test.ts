import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { SCHEMA_BUDGET, SchemaBudgetError, schemaInstance } from './schema-instance.ts';

/** This thread's CPU time in ms: what the work cost, whatever else the shared machine was running meanwhile. */
const cpuMs = (): number => {
  const usage = process.threadCpuUsage();
  return (usage.user + usage.system) / 1000;
};

describe('schemaInstance', () => {
  it('fills a nested zod schema (objects, arrays, enums, optional, nullable, union) so that zod accepts it', () => {
    const Address = z.object({ street: z.string(), zip: z.string().min(5).max(5) });
    const schema = z.object({
      name: z.string(),
      age: z.number().int().min(18).max(99),
      score: z.number().gt(0).lt(1),
      role: z.enum(['admin', 'user']),
      tags: z.array(z.string()).min(2),
      address: Address,
      previous: z.array(Address),
      nickname: z.string().optional(),
      manager: z.object({ id: z.string().uuid() }).nullable(),
      contact: z.union([z.object({ email: z.string().email() }), z.object({ phone: z.string() })]),
      active: z.boolean(),
      kind: z.literal('person'),
      joined: z.string().datetime(),
    });
    const value = schemaInstance(z.toJSONSchema(schema));
    const parsed = schema.parse(value);
    assert.equal(parsed.tags.length, 2);
    assert.equal(typeof parsed.address.street, 'string');
    assert.ok(parsed.previous.length >= 1, 'arrays get an item');
    assert.equal(parsed.kind, 'person');
  });

  it('follows $ref into $defs, with anyOf-null for Optional, as pydantic emits them', () => {
    const schema = {
      $defs: {
        Step: {
          properties: { explanation: { type: 'string' }, output: { type: 'string' } },
          required: ['explanation', 'output'],
          title: 'Step',
          type: 'object',
        },
        Color: { enum: ['red', 'green'], title: 'Color', type: 'string' },
      },
      properties: {
        steps: { items: { $ref: '#/$defs/Step' }, type: 'array' },
        final_answer: { type: 'string' },
        color: { $ref: '#/$defs/Color' },
        note: { anyOf: [{ type: 'string' }, { type: 'null' }], default: null },
        best: { allOf: [{ $ref: '#/$defs/Step' }], description: 'the best step' },
      },
      required: ['steps', 'final_answer', 'color', 'note', 'best'],
      title: 'MathReasoning',
      type: 'object',
      additionalProperties: false,
    };
    const value = schemaInstance(schema) as Record<string, unknown>;
    assert.deepEqual(Object.keys(value).sort(), ['best', 'color', 'final_answer', 'note', 'steps']);
    const steps = value['steps'] as Record<string, unknown>[];
    assert.equal(typeof steps[0]?.['explanation'], 'string');
    assert.equal(typeof steps[0]?.['output'], 'string');
    assert.equal(value['color'], 'red');
    assert.equal(typeof value['note'], 'string', 'the non-null branch is taken while shallow');
    assert.equal(typeof (value['best'] as Record<string, unknown>)['output'], 'string');
  });

  it('ends a recursive schema (a tree via #/definitions or #) instead of looping', () => {
    const Node: z.ZodType<{ label: string; children: unknown[] }> = z.lazy(() =>
      z.object({ label: z.string(), children: z.array(Node) }),
    );
    const value = schemaInstance(z.toJSONSchema(Node));
    Node.parse(value);
    const byRoot = schemaInstance({
      type: 'object',
      properties: { value: { type: 'integer' }, next: { anyOf: [{ $ref: '#' }, { type: 'null' }] } },
      required: ['value', 'next'],
    });
    let depth = 0;
    for (let node = byRoot as { next: unknown } | null; node; node = node.next as { next: unknown } | null)
      depth++;
    assert.ok(depth > 1 && depth < 20, `linked list of ${depth}`);
  });

  it('honours type lists, const, bounds, and answers the same every time', () => {
    const schema = {
      type: 'object',
      properties: {
        a: { type: ['null', 'integer'], minimum: 10, multipleOf: 5 },
        b: { const: 42 },
        c: { type: 'string', minLength: 30 },
        d: { type: 'array', items: { type: 'number' }, minItems: 0, maxItems: 0 },
      },
    };
    const value = schemaInstance(schema) as Record<string, unknown>;
    assert.equal(value['a'], 10);
    assert.equal(value['b'], 42);
    assert.ok((value['c'] as string).length >= 30);
    assert.deepEqual(value['d'], []);
    assert.deepEqual(schemaInstance(schema), value);
  });

  it('refuses what the budget cannot hold, fast: huge arrays and strings, self-reference, $ref cycles and chains', () => {
    const chainOf = (length: number): Record<string, unknown> => {
      const defs: Record<string, unknown> = { [`d${length}`]: { type: 'string' } };
      for (let i = 0; i < length; i++) defs[`d${i}`] = { $ref: `#/$defs/d${i + 1}` };
      return { $defs: defs, $ref: '#/$defs/d0' };
    };
    const fanOut = (levels: number): Record<string, unknown> => {
      const defs: Record<string, unknown> = { [`d${levels}`]: { type: 'string' } };
      for (let i = 0; i < levels; i++)
        defs[`d${i}`] = { type: 'array', minItems: 10, items: { $ref: `#/$defs/d${i + 1}` } };
      return { $defs: defs, $ref: '#/$defs/d0' };
    };
    const selfRef = {
      $defs: { a: { type: 'object', required: ['x'], properties: { x: { $ref: '#/$defs/a' } } } },
      $ref: '#/$defs/a',
    };
    const cases: Record<string, [unknown, RegExp]> = {
      'minItems 1e9': [
        { type: 'array', minItems: 1_000_000_000, items: { type: 'integer' } },
        /1000000000 items/,
      ],
      'minItems 2e7': [{ type: 'array', minItems: 20_000_000, items: { type: 'integer' } }, /20000000 items/],
      'minLength 1e8': [{ type: 'string', minLength: 100_000_000 }, /100000000 characters/],
      'self-referencing $defs': [selfRef, /no instance nested at most 32 levels/],
      'self-reference through properties': [
        { type: 'object', required: ['me'], properties: { me: { $ref: '#' } } },
        /no instance nested/,
      ],
      'a $ref cycle with no object between': [
        { $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' },
        /nest more than/,
      ],
      'a 5,000-long $ref chain': [chainOf(5_000), /nest more than/],
      'allOf of itself': [{ allOf: [{ $ref: '#' }] }, /nest more than/],
      'anyOf of itself': [{ anyOf: [{ $ref: '#' }, { $ref: '#' }] }, /nest more than/],
      'arrays of ten, twelve levels of $ref': [fanOut(12), /steps to fill/],
      'nested explicit minItems': [
        {
          type: 'array',
          minItems: 50,
          items: { type: 'array', minItems: 50, items: { type: 'array', minItems: 50 } },
        },
        /steps to fill|items|longer than/,
      ],
      'a long const, many times': [
        { type: 'array', minItems: 100, items: { const: 'x'.repeat(100_000) } },
        /longer than 65536 characters/,
      ],
      'strings that add up': [
        { type: 'array', minItems: 1_000, items: { type: 'string', minLength: 1_000 } },
        /longer than/,
      ],
      'sixty thousand properties': [
        {
          type: 'object',
          properties: Object.fromEntries(
            Array.from({ length: 60_000 }, (_, i) => [`p${i}`, { type: 'string' }]),
          ),
        },
        /steps to fill/,
      ],
      'sixty thousand types in a list': [
        {
          type: 'array',
          minItems: 1_000,
          items: { $ref: '#/$defs/t' },
          $defs: { t: { type: [...Array.from({ length: 60_000 }, () => 'string'), 'null'] } },
        },
        /steps to fill/,
      ],
    };
    for (const [name, [schema, message]] of Object.entries(cases)) {
      const started = cpuMs();
      assert.throws(
        () => schemaInstance(schema),
        (error: unknown) => {
          assert.ok(error instanceof SchemaBudgetError, `${name}: ${String(error)}`);
          assert.match(error.message, message, name);
          return true;
        },
      );
      const elapsed = cpuMs() - started;
      // The target: well under the 50 ms an event-loop turn may take, counted in CPU time (the machine is shared).
      assert.ok(elapsed < 30, `${name} took ${elapsed.toFixed(1)} ms`);
    }
  });

  it('whatever it answers stays within the budget: bounded output, and deep recursion with an exit still ends', () => {
    const heavy = {
      type: 'object',
      properties: Object.fromEntries(
        Array.from({ length: 200 }, (_, i) => [
          `p${i}`,
          { type: 'array', minItems: 5, items: { type: 'string', minLength: 40 } },
        ]),
      ),
    };
    const started = cpuMs();
    let text = '';
    try {
      text = JSON.stringify(schemaInstance(heavy));
    } catch (error) {
      assert.ok(error instanceof SchemaBudgetError);
    }
    assert.ok(text.length <= SCHEMA_BUDGET.chars + 1_024, `${text.length} characters`);
    assert.ok(cpuMs() - started < 30);
    const list = schemaInstance({
      $defs: {
        node: {
          type: 'object',
          required: ['next'],
          properties: { next: { anyOf: [{ $ref: '#/$defs/node' }, { type: 'null' }] } },
        },
      },
      $ref: '#/$defs/node',
    });
    assert.ok(JSON.stringify(list).includes('null'), 'the recursion ends on its null branch');
    assert.equal(
      schemaInstance({ $ref: '#/$defs/%E0%A4%A' }),
      null,
      'a malformed pointer resolves to nothing',
    );
    assert.deepEqual(schemaInstance({ $ref: `#/${'x'.repeat(5_000)}` }), null, 'so does an overlong one');
    for (const format of ['constructor', '__proto__', 'toString'])
      assert.equal(
        schemaInstance({ type: 'string', format }),
        'example',
        `format ${format} is no known format`,
      );
    assert.equal(schemaInstance({ anyOf: [1, 2] }), null, 'variants that are no schemas');
  });
});
