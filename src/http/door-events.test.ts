// The Responses and Messages front doors' encoding of canonical events, in process: event batches in, the typed SSE
// events out.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Admitted } from '../gateway/chat-gateway.ts';
import type { StreamEvent } from '../core/stream-event.ts';
import type { TextSink } from '../gateway/stream-sink.ts';
import { chatRequestOf } from '../core/testing.ts';
import { GatewayError } from '../core/gateway-error.ts';
import type { FrontDoor } from './front-door.ts';
import { messagesDoor } from './messages-door.ts';
import { responsesDoor } from './responses-door.ts';
import { createItemSeal } from './sealed-items.ts';

function recorder(): TextSink & { text: string; writes: number } {
  return {
    text: '',
    writes: 0,
    open() {},
    write(data) {
      this.text += data.toString();
      this.writes++;
      return true;
    },
    drain: () => Promise.resolve(),
    end() {},
    closed: false,
    onClose() {},
  };
}

/** Each SSE event's name and data. */
const parsed = (text: string): { name: string; data: Record<string, unknown> }[] =>
  text
    .split('\n\n')
    .filter(Boolean)
    .map((event) => {
      const [name, data] = event.split('\n') as [string, string];
      assert.ok(name.startsWith('event: ') && data.startsWith('data: '), event);
      return { name: name.slice(7), data: JSON.parse(data.slice(6)) as Record<string, unknown> };
    });

const admitted = { request: chatRequestOf({ model: 'model-a', stream: true }), promptTokens: 5 } as Admitted;
const usage = { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 };
const start: StreamEvent = { type: 'start', id: 'up', created: 1 };
const textAnswer: StreamEvent[][] = [
  [start, { type: 'text', text: '' }, { type: 'text', text: 'Hel' }],
  [
    { type: 'text', text: 'lo' },
    { type: 'finish', reason: 'stop' },
    { type: 'usage', usage },
  ],
];
const toolAnswer: StreamEvent[][] = [
  [start, { type: 'tool', index: 0, id: 'call_1', name: 'get', args: '' }],
  [
    { type: 'tool', index: 0, id: undefined, name: undefined, args: '{"a":1}' },
    { type: 'finish', reason: 'tool_calls' },
  ],
];

/** A stream through `door`'s sink: open, the batches, complete (or fail), end. */
function run(door: FrontDoor, batches: StreamEvent[][], failure?: GatewayError) {
  const text = recorder();
  const sink = door
    .exchange(
      { model: 'model-a', input: 'hi', messages: [{ role: 'user', content: 'hi' }], max_tokens: 9 },
      { accountId: 'acct_1', items: createItemSeal(undefined) },
    )
    .streamSink(text, admitted);
  sink.open({ rateLimits: {}, overheadMs: 0, costMicros: undefined });
  for (const batch of batches) assert.equal(sink.events(batch), true);
  if (failure) sink.fail(failure);
  else sink.complete(usage);
  sink.end();
  return parsed(text.text);
}

describe('the Messages door writes canonical events as Messages events', () => {
  it('text: message_start, ping, one text block of text_delta events, message_delta with stop_reason and usage', () => {
    const events = run(messagesDoor, textAnswer);
    assert.deepEqual(
      events.map((event) => event.name),
      [
        'message_start',
        'ping',
        'content_block_start',
        'content_block_delta',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ],
    );
    assert.deepEqual(events[3]?.data['delta'], { type: 'text_delta', text: 'Hel' });
    assert.deepEqual(events[6]?.data['delta'], { stop_reason: 'end_turn', stop_sequence: null });
    assert.deepEqual(events[6]?.data['usage'], {
      input_tokens: 5,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
      output_tokens: 4,
    });
  });

  it('a tool call: a tool_use block with its id and name, its arguments as input_json_delta, stop_reason tool_use', () => {
    const events = run(messagesDoor, toolAnswer);
    const blockStart = events.find((event) => event.name === 'content_block_start');
    assert.deepEqual(blockStart?.data['content_block'], {
      type: 'tool_use',
      id: 'toolu_call_1',
      name: 'get',
      input: {},
    });
    const deltas = events.filter((event) => event.name === 'content_block_delta');
    assert.deepEqual(
      deltas.map((event) => event.data['delta']),
      [{ type: 'input_json_delta', partial_json: '{"a":1}' }],
    );
    assert.equal((events.at(-2)?.data['delta'] as { stop_reason: string }).stop_reason, 'tool_use');
  });

  it('a failure mid-way is one error event in Anthropic’s shape', () => {
    const events = run(messagesDoor, [textAnswer[0]!], new GatewayError('provider_error', 'broke'));
    assert.deepEqual(events.at(-1), {
      name: 'error',
      data: { type: 'error', error: { type: 'api_error', message: 'broke' } },
    });
  });
});

describe('the Responses door writes canonical events as Responses events', () => {
  it('text: a message item of output_text deltas, then response.completed with the usage', () => {
    const events = run(responsesDoor, textAnswer);
    assert.deepEqual(
      events.map((event) => event.name),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ],
    );
    assert.deepEqual(
      events.map((event) => event.data['sequence_number']),
      [...events.keys()],
    );
    assert.equal(events[6]?.data['text'], 'Hello');
    const response = events.at(-1)?.data['response'] as { usage: { output_tokens: number }; model: string };
    assert.equal(response.usage.output_tokens, 4);
    assert.equal(response.model, 'model-a');
  });

  it('a tool call: a function_call item with its call id and name, its arguments as deltas', () => {
    const events = run(responsesDoor, toolAnswer);
    const added = events.find((event) => event.name === 'response.output_item.added');
    assert.equal((added?.data['item'] as { call_id: string }).call_id, 'call_1');
    assert.equal((added?.data['item'] as { name: string }).name, 'get');
    const done = events.find((event) => event.name === 'response.function_call_arguments.done');
    assert.equal(done?.data['arguments'], '{"a":1}');
  });

  it('a failure mid-way is one error event', () => {
    const events = run(responsesDoor, [textAnswer[0]!], new GatewayError('provider_error', 'broke'));
    assert.equal(events.at(-1)?.name, 'error');
    assert.equal(events.at(-1)?.data['code'], 'provider_error');
  });
});
