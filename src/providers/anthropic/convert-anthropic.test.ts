import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChatMessage, ChatRequest, TextPart } from '../../core/chat-types.ts';
import { chatRequestOf, type RequestFields } from '../../core/testing.ts';
import { ProviderError } from '../../core/provider-error.ts';
import {
  anthropicPromptTokens,
  type AnthropicResponse,
  convertAnthropicResponse,
  convertToAnthropicRequest,
  mapAnthropicStopReason,
  STRUCTURED_TOOL,
} from './convert-anthropic.ts';

const request = (fields: RequestFields = {}): ChatRequest =>
  chatRequestOf({
    model: 'model-c',
    messages: [{ role: 'user', content: 'hello' }],
    temperature: undefined,
    ...fields,
  });

const convert = (fields: RequestFields = {}, stream = false): Record<string, unknown> =>
  convertToAnthropicRequest(request(fields), 'claude-upstream', 1024, stream);

const WEATHER = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

describe('convertToAnthropicRequest', () => {
  it('names the upstream model, always sends max_tokens, and leaves out what the request does not set', () => {
    assert.deepEqual(convert(), {
      model: 'claude-upstream',
      max_tokens: 1024,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
    });
    assert.equal(convert({ maxTokens: 7 })['max_tokens'], 7, "the client's max_tokens wins");
    assert.equal(convert({}, true)['stream'], true);
  });

  it('moves system and developer messages to the top-level system prompt, joined by a blank line', () => {
    const body = convert({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
        { role: 'developer', content: 'Answer in French.' },
      ],
    });
    assert.equal(body['system'], 'Be brief.\n\nAnswer in French.');
    assert.deepEqual(body['messages'], [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
  });

  it('merges consecutive turns of one role, since the Messages API alternates user and assistant', () => {
    const body = convert({
      messages: [
        { role: 'user', content: 'one' },
        { role: 'user', content: 'two' },
        { role: 'assistant', content: 'three' },
        { role: 'user', content: 'four' },
      ],
    });
    assert.deepEqual(body['messages'], [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'one' },
          { type: 'text', text: 'two' },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'three' }] },
      { role: 'user', content: [{ type: 'text', text: 'four' }] },
    ]);
  });

  it('turns tool calls into tool_use blocks and tool answers into user tool_result blocks', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: 'Looking.',
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
          },
          { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: 'not json' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '18 °C' },
      { role: 'tool', tool_call_id: 'call_2', content: '21 °C' },
    ];
    assert.deepEqual(convert({ messages })['messages'], [
      { role: 'user', content: [{ type: 'text', text: 'weather in Paris and Rome?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Looking.' },
          { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'call_2', name: 'get_weather', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: '18 °C' },
          { type: 'tool_result', tool_use_id: 'call_2', content: '21 °C' },
        ],
      },
    ]);
  });

  it('an assistant turn with only tool calls has no empty text block', () => {
    const body = convert({
      messages: [
        { role: 'user', content: 'x' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
      ],
    });
    const assistant = (body['messages'] as { content: unknown[] }[])[1]!;
    assert.deepEqual(assistant.content, [{ type: 'tool_use', id: 'c', name: 'f', input: {} }]);
  });

  it('clamps temperature to Anthropic’s 0..1 and passes top_p and stop sequences', () => {
    assert.equal(convert({ temperature: 2 })['temperature'], 1);
    assert.equal(convert({ temperature: 0.3 })['temperature'], 0.3);
    assert.equal(convert({ temperature: 0 })['temperature'], 0);
    assert.equal(convert({ topP: 0.9 })['top_p'], 0.9);
    assert.deepEqual(convert({ stop: ['END'] })['stop_sequences'], ['END']);
  });

  it('offers tools with their JSON Schema as input_schema, and maps tool_choice', () => {
    const body = convert({ tools: [WEATHER] });
    assert.deepEqual(body['tools'], [
      {
        name: 'get_weather',
        description: 'Weather for a city',
        input_schema: WEATHER.function.parameters,
      },
    ]);
    assert.deepEqual(body['tool_choice'], { type: 'auto' });
    assert.deepEqual(convert({ tools: [WEATHER], toolChoice: 'auto' })['tool_choice'], { type: 'auto' });
    assert.deepEqual(convert({ tools: [WEATHER], toolChoice: 'required' })['tool_choice'], { type: 'any' });
    assert.deepEqual(
      convert({ tools: [WEATHER], toolChoice: { type: 'function', function: { name: 'get_weather' } } })[
        'tool_choice'
      ],
      { type: 'tool', name: 'get_weather' },
    );
  });

  it('a tool without parameters gets an empty object schema; without a description, none', () => {
    const body = convert({ tools: [{ type: 'function', function: { name: 'ping' } }] });
    assert.deepEqual(body['tools'], [{ name: 'ping', input_schema: { type: 'object', properties: {} } }]);
  });

  it('tool_choice "none" sends no tools at all', () => {
    const body = convert({ tools: [WEATHER], toolChoice: 'none' });
    assert.equal(body['tools'], undefined);
    assert.equal(body['tool_choice'], undefined);
  });

  it('a JSON Schema response format becomes one forced tool whose input is the answer', () => {
    const schema = { type: 'object', properties: { answer: { type: 'string' } } };
    const body = convert({
      responseFormat: { type: 'json_schema', json_schema: { name: 'reply', schema } },
    });
    assert.deepEqual(body['tools'], [
      { name: STRUCTURED_TOOL, description: 'Give the answer as reply.', input_schema: schema },
    ]);
    assert.deepEqual(body['tool_choice'], { type: 'tool', name: STRUCTURED_TOOL });
    const described = convert({
      responseFormat: { type: 'json_schema', json_schema: { name: 'r', description: 'The reply.', schema } },
    });
    assert.equal((described['tools'] as { description: string }[])[0]!.description, 'The reply.');
  });

  it('json_object asks for any JSON object; a schema without a type is made an object', () => {
    const body = convert({ responseFormat: { type: 'json_object' } });
    assert.deepEqual(body['tools'], [
      {
        name: STRUCTURED_TOOL,
        description: 'Give the answer as a JSON object.',
        input_schema: { type: 'object' },
      },
    ]);
    const untyped = convert({
      responseFormat: { type: 'json_schema', json_schema: { name: 'r', schema: { properties: {} } } },
    });
    assert.deepEqual((untyped['tools'] as { input_schema: unknown }[])[0]!.input_schema, {
      type: 'object',
      properties: {},
    });
  });

  it('beside the client’s tools, the structured tool is added and "auto" becomes "any"', () => {
    const body = convert({ tools: [WEATHER], responseFormat: { type: 'json_object' } });
    assert.deepEqual(
      (body['tools'] as { name: string }[]).map((tool) => tool.name),
      ['get_weather', STRUCTURED_TOOL],
    );
    assert.deepEqual(body['tool_choice'], { type: 'any' });
    const forced = convert({
      tools: [WEATHER],
      toolChoice: { type: 'function', function: { name: 'get_weather' } },
      responseFormat: { type: 'json_object' },
    });
    assert.deepEqual(forced['tool_choice'], { type: 'tool', name: 'get_weather' }, 'a named tool stays');
  });

  it('a schema whose root is not an object is the client’s 400, never retried', () => {
    assert.throws(
      () =>
        convert({
          responseFormat: { type: 'json_schema', json_schema: { name: 'list', schema: { type: 'array' } } },
        }),
      (error: unknown) =>
        error instanceof ProviderError &&
        error.status === 400 &&
        error.clientFault &&
        !error.retryable &&
        /model-c cannot honour response_format/.test(error.message),
    );
  });
});

describe('mapAnthropicStopReason', () => {
  it('maps every documented stop reason to a chat finish reason', () => {
    assert.equal(mapAnthropicStopReason('end_turn'), 'stop');
    assert.equal(mapAnthropicStopReason('stop_sequence'), 'stop');
    assert.equal(mapAnthropicStopReason('pause_turn'), 'stop');
    assert.equal(mapAnthropicStopReason('max_tokens'), 'length');
    assert.equal(mapAnthropicStopReason('tool_use'), 'tool_calls');
    assert.equal(mapAnthropicStopReason('refusal'), 'content_filter');
  });

  it('an unknown reason is a stop; none yet is null', () => {
    assert.equal(mapAnthropicStopReason('something_new'), 'stop');
    assert.equal(mapAnthropicStopReason(null), null);
    assert.equal(mapAnthropicStopReason(undefined), null);
    assert.equal(mapAnthropicStopReason(''), null);
  });
});

describe('anthropicPromptTokens', () => {
  it('bills input plus cache writes plus cache reads; missing counts are zero', () => {
    assert.equal(
      anthropicPromptTokens({
        input_tokens: 10,
        cache_creation_input_tokens: 200,
        cache_read_input_tokens: 3000,
      }),
      3210,
    );
    assert.equal(anthropicPromptTokens({ input_tokens: 5, cache_read_input_tokens: null }), 5);
    assert.equal(anthropicPromptTokens({}), 0);
  });
});

describe('convertAnthropicResponse', () => {
  const response = (fields: Partial<AnthropicResponse>): AnthropicResponse => ({
    id: 'msg_01',
    type: 'message',
    content: [],
    model: 'claude-upstream',
    stop_reason: 'end_turn',
    usage: { input_tokens: 12, output_tokens: 5 },
    ...fields,
  });

  it('a text answer: text blocks joined, usage summed, finish reason mapped', () => {
    const before = Math.floor(Date.now() / 1000);
    const completion = convertAnthropicResponse(
      response({
        content: [
          { type: 'text', text: 'Hello, ' },
          { type: 'text', text: 'world.' },
        ],
        usage: { input_tokens: 12, output_tokens: 5, cache_read_input_tokens: 3 },
      }),
    );
    const after = Math.floor(Date.now() / 1000);
    assert.equal(completion.id, 'msg_01');
    assert.equal(completion.object, 'chat.completion');
    assert.equal(completion.model, 'claude-upstream');
    assert.ok(completion.created >= before && completion.created <= after);
    assert.deepEqual(completion.choices, [
      { index: 0, message: { role: 'assistant', content: 'Hello, world.' }, finish_reason: 'stop' },
    ]);
    assert.deepEqual(completion.usage, {
      prompt_tokens: 15,
      completion_tokens: 5,
      total_tokens: 20,
      prompt_tokens_details: { cached_tokens: 3 },
    });
  });

  it('tool_use blocks become tool calls with JSON arguments; no text is content null', () => {
    const completion = convertAnthropicResponse(
      response({
        stop_reason: 'tool_use',
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }],
      }),
    );
    assert.deepEqual(completion.choices[0], {
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'toolu_1',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
          },
        ],
      },
      finish_reason: 'tool_calls',
    });
  });

  it('text beside a tool call is kept as content', () => {
    const completion = convertAnthropicResponse(
      response({
        stop_reason: 'tool_use',
        content: [
          { type: 'text', text: 'Let me check.' },
          { type: 'tool_use', id: 't', name: 'f', input: {} },
        ],
      }),
    );
    assert.equal(completion.choices[0]!.message.content, 'Let me check.');
    assert.equal(completion.choices[0]!.message.tool_calls?.length, 1);
  });

  it('the structured tool’s input is the content, without the text around it; the finish is a stop', () => {
    const completion = convertAnthropicResponse(
      response({
        stop_reason: 'tool_use',
        content: [
          { type: 'text', text: 'Here it is:' },
          { type: 'tool_use', id: 't', name: STRUCTURED_TOOL, input: { answer: 'yes' } },
        ],
      }),
    );
    assert.deepEqual(completion.choices[0], {
      index: 0,
      message: { role: 'assistant', content: '{"answer":"yes"}' },
      finish_reason: 'stop',
    });
  });

  it('a structured answer beside a real tool call leaves only the tool call', () => {
    const completion = convertAnthropicResponse(
      response({
        stop_reason: 'tool_use',
        content: [
          { type: 'tool_use', id: 's', name: STRUCTURED_TOOL, input: { a: 1 } },
          { type: 'tool_use', id: 't', name: 'get_weather', input: { city: 'Rome' } },
        ],
      }),
    );
    assert.equal(completion.choices[0]!.message.content, null);
    assert.deepEqual(
      completion.choices[0]!.message.tool_calls?.map((call) => call.function.name),
      ['get_weather'],
    );
    assert.equal(completion.choices[0]!.finish_reason, 'tool_calls');
  });

  it('block types it does not know (thinking, …) are skipped; a missing tool input is {}', () => {
    const completion = convertAnthropicResponse(
      response({
        stop_reason: 'max_tokens',
        content: [
          { type: 'thinking' },
          { type: 'text', text: 'partial' },
          { type: 'tool_use', id: 't', name: 'f', input: undefined },
        ],
        usage: {},
      }),
    );
    assert.equal(completion.choices[0]!.message.content, 'partial');
    assert.equal(completion.choices[0]!.message.tool_calls?.[0]?.function.arguments, '{}');
    assert.equal(completion.choices[0]!.finish_reason, 'length');
    assert.deepEqual(completion.usage, { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
  });
});

describe('convertToAnthropicRequest: cache_control marks', () => {
  const marked = (text: string, ttl?: '5m' | '1h'): TextPart[] => [
    { text, cache_control: ttl ? { type: 'ephemeral', ttl } : { type: 'ephemeral' } },
  ];

  it('puts marks on the system blocks, message blocks, tool results and tools they came on', () => {
    const body = convert({
      messages: [
        { role: 'system', content: 'short' },
        { role: 'system', content: 'long', cacheParts: marked('long', '1h') },
        {
          role: 'user',
          content: 'ab',
          cacheParts: [{ text: 'a' }, { text: '' }, { text: 'b', cache_control: { type: 'ephemeral' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny', cacheParts: marked('sunny', '5m') },
      ],
      tools: [{ ...WEATHER, cache_control: { type: 'ephemeral' } }],
    });
    assert.deepEqual(body['system'], [
      { type: 'text', text: 'short' },
      { type: 'text', text: 'long', cache_control: { type: 'ephemeral', ttl: '1h' } },
    ]);
    assert.deepEqual(body['messages'], [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b', cache_control: { type: 'ephemeral' } },
          {
            type: 'tool_result',
            tool_use_id: 'call_1',
            content: 'sunny',
            cache_control: { type: 'ephemeral', ttl: '5m' },
          },
        ],
      },
    ]);
    assert.deepEqual((body['tools'] as Record<string, unknown>[])[0]?.['cache_control'], {
      type: 'ephemeral',
    });
  });

  it('without marks the system prompt stays one string and no block carries cache_control', () => {
    const body = convert({
      messages: [
        { role: 'system', content: 'one' },
        { role: 'developer', content: 'two' },
        { role: 'user', content: 'hi' },
      ],
      tools: [WEATHER],
    });
    assert.equal(body['system'], 'one\n\ntwo');
    assert.doesNotMatch(JSON.stringify(body), /cache_control/);
  });
});
