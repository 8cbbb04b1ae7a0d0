import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { schemaInstance } from './schema-instance.ts';

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
});
