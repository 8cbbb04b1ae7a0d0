import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ModelConfig } from '../core/config.ts';
import { GatewayError } from '../core/gateway-error.ts';
import { knownParams } from '../core/known-params.ts';
import { MAX_JSON_DEPTH, parseChatRequest } from './parse-chat-request.ts';

const MODEL: ModelConfig = {
  id: 'model-b',
  description: 'test',
  contextWindow: 64_000,
  maxOutputTokens: 8_192,
  defaultMaxTokens: 1_024,
  inputMicrosPerMillion: 130_000,
  cachedInputMicrosPerMillion: 130_000,
  cacheWriteMicrosPerMillion: 130_000,
  cacheWrite1hMicrosPerMillion: 130_000,
  outputMicrosPerMillion: 130_000,
  latencyClass: 'fast',
  deployments: [],
  fallbacks: [],
};
const MODELS = new Map([[MODEL.id, MODEL]]);
const MAX_MESSAGES = 2048;
const USER = { role: 'user', content: 'hi' };

const parse = (body: unknown, maxMessages = MAX_MESSAGES) => parseChatRequest(body, MODELS, maxMessages);
/** A request that passed, with its known parameters as the adapters read them. */
const ok = (extra: Record<string, unknown>) => {
  const { request } = parse({ model: 'model-b', messages: [USER], ...extra });
  return { ...request, ...knownParams(request.body) };
};

/** Asserts a 400 invalid_request whose message names `field` (when given). */
function rejects(body: unknown, field?: string | RegExp, maxMessages = MAX_MESSAGES): void {
  assert.throws(
    () => parse(body, maxMessages),
    (error: unknown) => {
      assert.ok(error instanceof GatewayError, `not a GatewayError: ${String(error)}`);
      assert.equal(error.code, 'invalid_request');
      assert.equal(error.status, 400);
      if (typeof field === 'string') assert.ok(error.message.includes(field), error.message);
      else if (field) assert.match(error.message, field);
      return true;
    },
  );
}
const rejectsField = (extra: Record<string, unknown>, field?: string | RegExp) =>
  rejects({ model: 'model-b', messages: [USER], ...extra }, field);

describe('parseChatRequest: the body and the model', () => {
  it('accepts a minimal request and fills the defaults', () => {
    const { request, model } = parse({ model: 'model-b', messages: [USER] });
    assert.equal(model, MODEL);
    assert.equal(request.model, 'model-b');
    assert.deepEqual(request.messages, [{ role: 'user', content: 'hi' }]);
    assert.equal(request.stream, false);
    assert.equal(request.includeUsage, false);
    // The spec's default temperature is the parameter policy's (param-policy.test.ts), not the parse's.
    assert.deepEqual(knownParams(request.body), {
      temperature: undefined,
      topP: undefined,
      maxTokens: undefined,
      stop: undefined,
      tools: undefined,
      toolChoice: undefined,
      responseFormat: undefined,
    });
  });

  it('refuses a body that is not an object', () => {
    for (const body of [null, undefined, 'x', 3, [], [{ model: 'model-b' }]]) rejects(body, 'JSON object');
  });

  it('requires model as a non-empty string', () => {
    rejects({ messages: [USER] }, 'model');
    rejects({ model: '', messages: [USER] }, 'model');
    rejects({ model: 7, messages: [USER] }, 'model');
  });

  it('an unknown model is 404 model_not_found, naming it', () => {
    assert.throws(
      () => parse({ model: 'model-z', messages: [USER] }),
      (error: unknown) => {
        assert.ok(error instanceof GatewayError);
        assert.equal(error.code, 'model_not_found');
        assert.equal(error.status, 404);
        assert.equal(error.type, 'invalid_request_error');
        assert.match(error.message, /"model-z"/);
        return true;
      },
    );
    assert.throws(
      () => parse({ model: 'x'.repeat(500), messages: [USER] }),
      (error: GatewayError) =>
        error.message.includes(`"${'x'.repeat(100)}"`) && !error.message.includes('x'.repeat(101)),
    );
  });
});

describe('parseChatRequest: messages', () => {
  it('requires a non-empty array', () => {
    rejectsField({ messages: undefined }, 'messages');
    rejectsField({ messages: [] }, 'messages');
    rejectsField({ messages: 'hi' }, 'messages');
    rejectsField({ messages: { 0: USER } }, 'messages');
  });

  it('takes up to the cap and refuses one more', () => {
    assert.equal(parse({ model: 'model-b', messages: Array(2048).fill(USER) }).request.messages.length, 2048);
    rejects({ model: 'model-b', messages: Array(2049).fill(USER) }, '2048');
    assert.equal(parse({ model: 'model-b', messages: [USER, USER] }, 2).request.messages.length, 2);
    rejects({ model: 'model-b', messages: [USER, USER, USER] }, 'at most 2', 2);
  });

  it('takes 128 tools and refuses 129, naming the limit', () => {
    const tool = (i: number) => ({
      type: 'function',
      function: { name: `t${i}`, parameters: { type: 'object' } },
    });
    const tools = (n: number) => Array.from({ length: n }, (_, i) => tool(i));
    assert.equal(ok({ tools: tools(128) }).tools?.length, 128);
    rejectsField({ tools: tools(129) }, /tools may hold at most 128/);
  });

  it('keeps a multi-turn history in order', () => {
    const messages = [
      { role: 'system', content: 's' },
      { role: 'user', content: 'u' },
      { role: 'assistant', content: 'a' },
      { role: 'developer', content: 'd' },
    ];
    assert.deepEqual(ok({ messages }).messages, messages);
  });

  it('each message is an object with a known role', () => {
    rejectsField({ messages: [USER, 'hi'] }, 'messages[1] must be an object');
    rejectsField({ messages: [null] }, 'messages[0]');
    rejectsField({ messages: [[USER]] }, 'messages[0]');
    rejectsField({ messages: [{ role: 'wizard', content: 'x' }] }, 'messages[0].role');
    rejectsField({ messages: [{ content: 'x' }] }, 'messages[0].role');
    rejectsField({ messages: [{ role: 5, content: 'x' }] }, 'messages[0].role');
  });

  it('content is a string or an array of text parts, joined', () => {
    rejectsField({ messages: [{ role: 'user' }] }, 'messages[0].content');
    rejectsField({ messages: [{ role: 'user', content: null }] }, 'messages[0].content');
    rejectsField({ messages: [{ role: 'user', content: 5 }] }, 'messages[0].content');
    rejectsField(
      { messages: [{ role: 'user', content: { type: 'text', text: 'x' } }] },
      'messages[0].content',
    );
    const parts = [
      { type: 'text', text: 'one ' },
      { type: 'text', text: 'two' },
    ];
    assert.equal(ok({ messages: [{ role: 'user', content: parts }] }).messages[0]?.content, 'one two');
    assert.equal(ok({ messages: [{ role: 'user', content: [] }] }).messages[0]?.content, '');
    rejectsField({ messages: [{ role: 'user', content: [{ type: 'image_url', text: 'x' }] }] }, 'content[0]');
    rejectsField({ messages: [{ role: 'user', content: [{ type: 'text', text: 1 }] }] }, 'content[0]');
    rejectsField({ messages: [{ role: 'user', content: [{ type: 'text' }] }] }, 'content[0]');
    rejectsField({ messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, 'b'] }] }, 'content[1]');
    rejectsField({ messages: [{ role: 'user', content: [null] }] }, 'content[0]');
  });

  it('name must be a string when present', () => {
    assert.equal(ok({ messages: [{ role: 'user', content: 'x', name: 'ann' }] }).messages[0]?.name, 'ann');
    assert.equal('name' in ok({ messages: [USER] }).messages[0]!, false);
    rejectsField({ messages: [{ role: 'user', content: 'x', name: 3 }] }, 'messages[0].name');
    rejectsField({ messages: [{ role: 'user', content: 'x', name: null }] }, 'messages[0].name');
  });

  it('an assistant message with tool calls may have null content; the calls are checked', () => {
    const call = { id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } };
    const parsed = ok({ messages: [USER, { role: 'assistant', content: null, tool_calls: [call] }] })
      .messages[1]!;
    assert.equal(parsed.content, null);
    assert.deepEqual(parsed.tool_calls, [call]);
    assert.equal(
      ok({ messages: [USER, { role: 'assistant', tool_calls: [call] }] }).messages[1]?.content,
      null,
    );
    assert.equal(
      'tool_calls' in ok({ messages: [{ role: 'assistant', content: 'x', tool_calls: null }] }).messages[0]!,
      false,
    );
    rejectsField({ messages: [{ role: 'assistant', content: null }] }, 'messages[0].content');
    rejectsField({ messages: [{ role: 'user', content: null, tool_calls: [call] }] }, 'messages[0].content');
    rejectsField(
      { messages: [{ role: 'assistant', content: null, tool_calls: call }] },
      'tool_calls must be an array',
    );
    const broken = [
      { ...call, id: 1 },
      { ...call, type: 'code' },
      { ...call, function: 'f' },
      { ...call, function: { name: 1, arguments: '{}' } },
      { ...call, function: { name: 'f', arguments: {} } },
      null,
    ];
    for (const bad of broken)
      rejectsField(
        { messages: [{ role: 'assistant', content: null, tool_calls: [call, bad] }] },
        'tool_calls[1]',
      );
  });

  it('an assistant message with tool calls still checks and joins a content that is present', () => {
    const call = { id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } };
    const parts = [
      { type: 'text', text: 'a' },
      { type: 'text', text: 'b' },
    ];
    assert.equal(
      ok({ messages: [{ role: 'assistant', content: parts, tool_calls: [call] }] }).messages[0]?.content,
      'ab',
    );
    rejectsField(
      { messages: [{ role: 'assistant', content: 5, tool_calls: [call] }] },
      'messages[0].content',
    );
  });

  it('a tool message needs its tool_call_id', () => {
    assert.equal(
      ok({ messages: [{ role: 'tool', content: 'r', tool_call_id: 'c1' }] }).messages[0]?.tool_call_id,
      'c1',
    );
    assert.equal(
      'tool_call_id' in ok({ messages: [{ role: 'user', content: 'r', tool_call_id: 'c1' }] }).messages[0]!,
      false,
    );
    rejectsField({ messages: [{ role: 'tool', content: 'r' }] }, 'messages[0].tool_call_id');
    rejectsField({ messages: [{ role: 'tool', content: 'r', tool_call_id: '' }] }, 'tool_call_id');
    rejectsField({ messages: [{ role: 'tool', content: 'r', tool_call_id: 3 }] }, 'tool_call_id');
  });
});

describe('parseChatRequest: sampling ranges (one rule broken per case)', () => {
  const ranges = [
    ['temperature', 0, 2],
    ['top_p', 0, 1],
    ['presence_penalty', -2, 2],
    ['frequency_penalty', -2, 2],
  ] as const;
  for (const [field, min, max] of ranges) {
    it(`${field} accepts ${min}..${max} inclusive and refuses either side`, () => {
      for (const value of [min, max, (min + max) / 2]) ok({ [field]: value });
      ok({ [field]: null });
      rejectsField({ [field]: min - 0.01 }, `${field} must be between ${min} and ${max}`);
      rejectsField({ [field]: max + 0.01 }, `${field} must be between ${min} and ${max}`);
      rejectsField({ [field]: '1' }, `${field} must be a number`);
      rejectsField({ [field]: Number.NaN }, `${field} must be a number`);
      rejectsField({ [field]: Number.POSITIVE_INFINITY }, `${field} must be a number`);
      rejectsField({ [field]: true }, `${field} must be a number`);
    });
  }

  it('passes temperature and top_p through as sent', () => {
    assert.equal(ok({ temperature: 0 }).temperature, 0);
    assert.equal(ok({ temperature: 2 }).temperature, 2);
    assert.equal(ok({ temperature: null }).temperature, undefined);
    assert.equal(ok({ top_p: 0 }).topP, 0);
    assert.equal(ok({ top_p: 1 }).topP, 1);
  });
});

describe('parseChatRequest: max_tokens, stream, stop, n', () => {
  it('max_tokens is a positive integer up to the model output limit; the smaller of the two fields wins', () => {
    assert.equal(ok({ max_tokens: 1 }).maxTokens, 1);
    assert.equal(ok({ max_tokens: 8192 }).maxTokens, 8192);
    assert.equal(ok({ max_completion_tokens: 100 }).maxTokens, 100);
    assert.equal(ok({ max_tokens: 300, max_completion_tokens: 200 }).maxTokens, 200);
    assert.equal(ok({ max_tokens: 200, max_completion_tokens: 300 }).maxTokens, 200);
    assert.equal(ok({ max_tokens: null }).maxTokens, undefined);
    for (const field of ['max_tokens', 'max_completion_tokens']) {
      rejectsField({ [field]: 0 }, `${field} must be a positive integer`);
      rejectsField({ [field]: -1 }, `${field} must be a positive integer`);
      rejectsField({ [field]: 1.5 }, `${field} must be a positive integer`);
      rejectsField({ [field]: '10' }, `${field} must be a positive integer`);
      rejectsField({ [field]: 8193 }, `${field} must be at most 8192 for model-b`);
    }
  });

  it('stream is a boolean; stream_options.include_usage a boolean', () => {
    assert.equal(ok({ stream: true }).stream, true);
    assert.equal(ok({ stream: false }).stream, false);
    assert.equal(ok({ stream: null }).stream, false);
    rejectsField({ stream: 'true' }, 'stream must be a boolean');
    rejectsField({ stream: 1 }, 'stream must be a boolean');
    assert.equal(ok({ stream: true, stream_options: { include_usage: true } }).includeUsage, true);
    assert.equal(ok({ stream: true, stream_options: { include_usage: false } }).includeUsage, false);
    assert.equal(ok({ stream: true, stream_options: {} }).includeUsage, false);
    assert.equal(ok({ stream_options: null }).includeUsage, false);
    rejectsField({ stream_options: true }, 'stream_options must be an object');
    rejectsField({ stream_options: [] }, 'stream_options must be an object');
    rejectsField({ stream_options: { include_usage: 'yes' } }, 'stream_options.include_usage');
    rejectsField({ stream_options: { include_usage: null } }, 'stream_options.include_usage');
  });

  it('stop is a string or up to 4 strings', () => {
    assert.deepEqual(ok({ stop: 'END' }).stop, ['END']);
    assert.deepEqual(ok({ stop: ['a', 'b', 'c', 'd'] }).stop, ['a', 'b', 'c', 'd']);
    assert.deepEqual(ok({ stop: [] }).stop, []);
    assert.equal(ok({ stop: null }).stop, undefined);
    rejectsField({ stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop');
    rejectsField({ stop: ['a', 1] }, 'stop');
    rejectsField({ stop: 5 }, 'stop');
  });

  it('n is a whole number from 1 to 8', () => {
    ok({ n: 1 });
    ok({ n: null });
    ok({ n: 8 });
    rejectsField({ n: 9 }, 'n must be a whole number from 1 to 8');
    rejectsField({ n: 0 }, 'n must be a whole number from 1 to 8');
    rejectsField({ n: 2.5 }, 'n must be a whole number from 1 to 8');
  });

  it('keeps the body as sent', () => {
    const body = { model: 'model-b', messages: [USER], user: 'u-1', seed: 3 };
    assert.equal(parse(body).request.body, body);
  });
});

describe('parseChatRequest: tools and tool_choice', () => {
  const tool = {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  };

  it('accepts the spec tool definition and keeps it as sent', () => {
    assert.deepEqual(ok({ tools: [tool] }).tools, [tool]);
    assert.deepEqual(ok({ tools: [{ type: 'function', function: { name: 'f' } }] }).tools, [
      { type: 'function', function: { name: 'f' } },
    ]);
    assert.equal(ok({ tools: [] }).tools, undefined, 'no tools offered');
    assert.equal(ok({ tools: null }).tools, undefined);
    const extra = ok({ tools: [{ type: 'function', function: { name: 'f', strict: true } }] }).tools?.[0];
    assert.deepEqual(extra, { type: 'function', function: { name: 'f', strict: true } });
  });

  it('refuses each broken part of a tool', () => {
    const fn = tool.function;
    rejectsField({ tools: tool }, 'tools must be an array');
    rejectsField({ tools: [tool, null] }, 'tools[1].type');
    rejectsField({ tools: [{ ...tool, type: 'code' }] }, 'tools[0].type');
    rejectsField({ tools: [{ type: 'function' }] }, 'tools[0].function must be an object');
    rejectsField({ tools: [{ type: 'function', function: { ...fn, name: 5 } }] }, 'tools[0].function.name');
    rejectsField({ tools: [{ type: 'function', function: { ...fn, name: '' } }] }, 'tools[0].function.name');
    rejectsField(
      { tools: [{ type: 'function', function: { ...fn, name: 'a b' } }] },
      'tools[0].function.name',
    );
    rejectsField(
      { tools: [{ type: 'function', function: { ...fn, name: 'x'.repeat(65) } }] },
      'function.name',
    );
    ok({ tools: [{ type: 'function', function: { name: 'A-z_0'.padEnd(64, '9') } }] });
    rejectsField({ tools: [{ type: 'function', function: { ...fn, name: 'ok\nbad' } }] }, 'function.name');
    rejectsField(
      { tools: [{ type: 'function', function: { ...fn, description: 1 } }] },
      'function.description',
    );
    rejectsField(
      { tools: [{ type: 'function', function: { ...fn, parameters: 'x' } }] },
      'function.parameters',
    );
    rejectsField(
      { tools: [{ type: 'function', function: { ...fn, parameters: { type: 'array' } } }] },
      'function.parameters',
    );
    rejectsField(
      { tools: [{ type: 'function', function: { ...fn, parameters: { type: 'object', properties: [] } } }] },
      'parameters.properties',
    );
    rejectsField(
      {
        tools: [{ type: 'function', function: { ...fn, parameters: { type: 'object', required: 'city' } } }],
      },
      'parameters.required',
    );
    rejectsField(
      {
        tools: [
          { type: 'function', function: { ...fn, parameters: { type: 'object', required: ['a', 1] } } },
        ],
      },
      'parameters.required',
    );
    ok({ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }] });
  });

  it('tool_choice: none, auto, required (with tools), or a named tool from tools', () => {
    assert.equal(ok({ tool_choice: 'none' }).toolChoice, 'none');
    assert.equal(ok({ tool_choice: 'auto' }).toolChoice, 'auto');
    assert.equal(ok({ tool_choice: null }).toolChoice, undefined);
    assert.equal(ok({ tools: [tool], tool_choice: 'required' }).toolChoice, 'required');
    rejectsField({ tool_choice: 'required' }, 'tool_choice "required" needs tools');
    rejectsField({ tools: [], tool_choice: 'required' }, 'tool_choice "required" needs tools');
    const named = { type: 'function', function: { name: 'get_weather' } };
    assert.deepEqual(ok({ tools: [tool], tool_choice: { ...named, extra: 1 } }).toolChoice, named);
    rejectsField({ tools: [tool], tool_choice: { type: 'function', function: { name: 'other' } } }, 'other');
    const second = { type: 'function', function: { name: 'second_tool' } };
    assert.deepEqual(
      ok({ tools: [tool, second], tool_choice: { type: 'function', function: { name: 'second_tool' } } })
        .toolChoice,
      {
        type: 'function',
        function: { name: 'second_tool' },
      },
    );
    rejectsField({ tool_choice: named }, 'get_weather');
    rejectsField({ tools: [tool], tool_choice: 'always' }, 'tool_choice must be');
    rejectsField(
      { tools: [tool], tool_choice: { type: 'tool', function: { name: 'get_weather' } } },
      'tool_choice must be',
    );
    rejectsField(
      { tools: [tool], tool_choice: { type: 'function', function: 'get_weather' } },
      'tool_choice must be',
    );
    rejectsField(
      { tools: [tool], tool_choice: { type: 'function', function: { name: 1 } } },
      'tool_choice must be',
    );
  });
});

/** The GatewayError a body is refused with. */
function refusal(body: unknown): GatewayError {
  try {
    parse(body);
  } catch (error) {
    assert.ok(error instanceof GatewayError, `not a GatewayError: ${String(error)}`);
    return error;
  }
  assert.fail('accepted');
}

describe('parseChatRequest: the error names the offending field (param)', () => {
  it('param is the field path the message starts with, the model on a 404, null for the body itself', () => {
    assert.equal(refusal({ model: 'model-b', messages: [USER], temperature: 3 }).param, 'temperature');
    assert.equal(
      refusal({ model: 'model-b', messages: [{ role: 'robot', content: 'x' }] }).param,
      'messages[0].role',
    );
    const unknown = refusal({ model: 'no-such-model', messages: [USER] });
    assert.equal(unknown.code, 'model_not_found');
    assert.equal(unknown.param, 'model');
    assert.equal(refusal('not an object').param, null);
    assert.equal(refusal({ model: 'model-b', messages: [USER], x: nest(MAX_JSON_DEPTH) }).param, null);
  });

  it('a bad role lists the roles that are allowed', () => {
    const error = refusal({ model: 'model-b', messages: [{ role: 'robot', content: 'x' }] });
    for (const role of ['system', 'user', 'assistant', 'tool'])
      assert.ok(error.message.includes(role), error.message);
    assert.match(error.message, /, /);
  });
});

/** An object `levels` deep: {} is 1, {a: {}} is 2. */
function nest(levels: number): object {
  let value: object = {};
  for (let i = 1; i < levels; i++) value = i % 2 ? { a: value } : [value];
  return value;
}

describe('parseChatRequest: JSON nesting', () => {
  it(`accepts ${MAX_JSON_DEPTH} levels of objects and arrays (the body is the first) and refuses one more`, () => {
    assert.ok(ok({ x: nest(MAX_JSON_DEPTH - 1) }));
    rejectsField({ x: nest(MAX_JSON_DEPTH) }, `deeper than ${MAX_JSON_DEPTH} levels`);
    rejectsField({ x: [1, 'a', null, { b: nest(MAX_JSON_DEPTH - 1) }] }, 'deeper than');
    rejects({ model: 'model-b', messages: [{ ...USER, deep: nest(MAX_JSON_DEPTH - 2) }] }, 'deeper than');
    assert.ok(ok({ x: { s: 'a string is not a level', n: null, list: [1, 2, 3] } }));
  });
});

describe('parseChatRequest: response_format', () => {
  it('text is the default; json_object and json_schema are kept', () => {
    assert.equal(ok({}).responseFormat, undefined);
    assert.equal(ok({ response_format: null }).responseFormat, undefined);
    assert.equal(ok({ response_format: { type: 'text' } }).responseFormat, undefined);
    assert.deepEqual(ok({ response_format: { type: 'json_object' } }).responseFormat, {
      type: 'json_object',
    });
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    assert.deepEqual(
      ok({
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'answer-1', schema, strict: true, description: 'one answer' },
        },
      }).responseFormat,
      {
        type: 'json_schema',
        json_schema: { name: 'answer-1', schema, strict: true, description: 'one answer' },
      },
    );
    assert.deepEqual(
      ok({ response_format: { type: 'json_schema', json_schema: { name: 'a' } } }).responseFormat,
      { type: 'json_schema', json_schema: { name: 'a', schema: {} } },
      'strict may be left out',
    );
    assert.deepEqual(
      ok({ response_format: { type: 'json_schema', json_schema: { name: 'a', strict: null } } })
        .responseFormat,
      { type: 'json_schema', json_schema: { name: 'a', schema: {} } },
    );
  });

  it('refuses another type, a bad name, a schema that is not an object, a strict that is not a boolean', () => {
    rejectsField({ response_format: { type: 'xml' } }, 'response_format.type');
    rejectsField({ response_format: 'json_object' }, 'response_format.type');
    rejectsField({ response_format: { type: 'json_schema' } }, 'response_format.json_schema.name');
    rejectsField(
      { response_format: { type: 'json_schema', json_schema: { name: 'a b' } } },
      'json_schema.name',
    );
    rejectsField(
      { response_format: { type: 'json_schema', json_schema: { name: 'a', schema: [] } } },
      'json_schema.schema',
    );
    rejectsField(
      { response_format: { type: 'json_schema', json_schema: { name: 'a', strict: 'yes' } } },
      'json_schema.strict',
    );
  });
});

describe('parseChatRequest: cache_control marks', () => {
  it('keeps the parts of a message only when one carries a mark, and joins their text either way', () => {
    const plain = ok({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
        },
      ],
    });
    assert.deepEqual(plain.messages[0], { role: 'user', content: 'ab' });
    const marked = ok({
      messages: [
        {
          role: 'system',
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b', cache_control: { type: 'ephemeral', ttl: '1h' } },
          ],
        },
        USER,
      ],
    });
    assert.deepEqual(marked.messages[0], {
      role: 'system',
      content: 'ab',
      cacheParts: [{ text: 'a' }, { text: 'b', cache_control: { type: 'ephemeral', ttl: '1h' } }],
    });
  });

  it('refuses a mark that is not ephemeral, a ttl other than 5m or 1h, on parts and on tools', () => {
    const part = (mark: unknown) => ({
      messages: [{ role: 'user', content: [{ type: 'text', text: 'a', cache_control: mark }] }],
    });
    rejectsField(part({ type: 'persistent' }), 'messages[0].content[0].cache_control');
    rejectsField(part({ type: 'ephemeral', ttl: '2h' }), 'messages[0].content[0].cache_control');
    rejectsField(part('ephemeral'), 'messages[0].content[0].cache_control');
    const tool = { type: 'function', function: { name: 'f' } };
    rejectsField({ tools: [{ ...tool, cache_control: { type: 'x' } }] }, 'tools[0].cache_control');
    assert.equal(
      ok({ tools: [{ ...tool, cache_control: { type: 'ephemeral', ttl: '5m' } }] }).tools?.length,
      1,
    );
  });
});
