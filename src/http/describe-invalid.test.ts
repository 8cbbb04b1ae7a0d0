import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeInvalid } from './error-handler.ts';

describe('describeInvalid: a schema failure as a message and a param', () => {
  it('names a nested field as OpenAI writes param, from the JSON pointer', () => {
    const type = describeInvalid('body', {
      instancePath: '/models/2/id',
      keyword: 'type',
      message: 'must be string',
      params: {},
    });
    assert.deepEqual(type, { message: 'body.models[2].id must be string', param: 'models[2].id' });
    // Only a part made of digits alone is an array index.
    assert.deepEqual(describeInvalid('body', { instancePath: '/items/12/v2/3d', keyword: 'x', params: {} }), {
      message: 'body.items[12].v2.3d is invalid',
      param: 'items[12].v2.3d',
    });
    const escaped = describeInvalid('body', { instancePath: '/a~1b/c~0d', keyword: 'x', params: {} });
    assert.deepEqual(escaped, { message: 'body.a/b.c~d is invalid', param: 'a/b.c~d' });
  });

  it('a missing or unknown field is the param, under its parent object', () => {
    const cases: [string, string, string, Record<string, unknown>, { message: string; param: string }][] = [
      [
        'body',
        '/plan',
        'required',
        { missingProperty: 'id' },
        { message: 'body.plan must have the field id', param: 'plan.id' },
      ],
      [
        'querystring',
        '',
        'additionalProperties',
        { additionalProperty: 'x' },
        { message: 'querystring has unknown field x', param: 'x' },
      ],
      [
        'body',
        '/plan',
        'additionalProperties',
        { additionalProperty: 'extra' },
        { message: 'body.plan has unknown field extra', param: 'plan.extra' },
      ],
    ];
    for (const [where, instancePath, keyword, params, expected] of cases)
      assert.deepEqual(describeInvalid(where, { instancePath, keyword, params }), expected);
  });

  it('a pattern is described in words, never shown as a regular expression', () => {
    const pattern = { instancePath: '/limit', keyword: 'pattern', params: { pattern: '^\\d+$' } };
    assert.deepEqual(
      describeInvalid('querystring', { ...pattern, parentSchema: { description: 'a number' } }),
      {
        message: 'querystring.limit must be a number',
        param: 'limit',
      },
    );
    assert.deepEqual(describeInvalid('querystring', pattern), {
      message: 'querystring.limit is not in the expected form',
      param: 'limit',
    });
  });

  it('an enum lists its values; a format names itself; a failure of the whole body has no param', () => {
    assert.equal(
      describeInvalid('body', { instancePath: '/s', keyword: 'enum', params: { allowedValues: ['a', null] } })
        .message,
      'body.s must be one of "a", null',
    );
    assert.deepEqual(
      describeInvalid('body', { instancePath: '/s', keyword: 'enum', params: { allowedValues: ['a'] } })
        .param,
      's',
    );
    assert.deepEqual(
      describeInvalid('body', { instancePath: '', keyword: 'enum', params: { allowedValues: ['a'] } }).param,
      null,
    );
    assert.deepEqual(
      describeInvalid('body', { instancePath: '/at', keyword: 'format', params: { format: 'date-time' } }),
      { message: 'body.at must be a valid date-time', param: 'at' },
    );
    assert.deepEqual(
      describeInvalid('body', { instancePath: '', keyword: 'type', message: 'must be object', params: {} }),
      { message: 'body must be object', param: null },
    );
    assert.deepEqual(describeInvalid('params', undefined), { message: 'params is invalid', param: null });
  });
});
