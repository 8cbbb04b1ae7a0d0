import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { StreamEvent } from '../../core/stream-event.ts';
import { ProviderError } from '../../core/provider-error.ts';
import { anthropicDecoder } from './anthropic-provider.ts';
import { STRUCTURED_TOOL } from './convert-anthropic.ts';
import { quietEvent, textDeltaOf } from './text-delta.ts';

/** Each event's data through one decoder: the canonical events, and whether the last one ended the stream. */
function decode(events: object[]): { out: StreamEvent[]; ended: boolean } {
  const decoder = anthropicDecoder();
  const out: StreamEvent[] = [];
  let ended = false;
  for (const event of events) ended = decoder.event(Buffer.from(JSON.stringify(event)), out);
  return { out, ended };
}

const start = {
  type: 'message_start',
  message: { id: 'msg_1', model: 'claude', usage: { input_tokens: 9 } },
};
const text = (value: string) => ({
  type: 'content_block_delta',
  index: 0,
  delta: { type: 'text_delta', text: value },
});
const stop = (reason: string | null, outputTokens: number) => ({
  type: 'message_delta',
  delta: { stop_reason: reason },
  usage: { output_tokens: outputTokens },
});

describe('the Anthropic stream as canonical events', () => {
  it('message_start, text deltas, message_delta and message_stop: start, text, finish, usage, the end', () => {
    const { out, ended } = decode([
      start,
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'ping' },
      text('Hel'),
      text('lo'),
      { type: 'content_block_stop', index: 0 },
      stop('end_turn', 2),
      { type: 'message_stop' },
    ]);
    assert.equal(ended, true);
    assert.equal(out[0]?.type, 'start');
    assert.equal(out[0]?.type === 'start' && out[0].id, 'msg_1');
    assert.deepEqual(out.slice(1), [
      { type: 'text', text: 'Hel' },
      { type: 'text', text: 'lo' },
      { type: 'finish', reason: 'stop' },
      { type: 'usage', usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 } },
    ]);
  });

  it('a tool_use block: a tool call with id and name, then its argument fragments; the finish is tool_calls', () => {
    const { out } = decode([
      start,
      {
        type: 'content_block_start',
        index: 1,
        content_block: { type: 'tool_use', id: 'toolu_1', name: 'get' },
      },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"a":' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '1}' } },
      stop('tool_use', 5),
    ]);
    assert.deepEqual(out.slice(1), [
      { type: 'tool', index: 0, id: 'toolu_1', name: 'get', args: '' },
      { type: 'tool', index: 0, id: undefined, name: undefined, args: '{"a":' },
      { type: 'tool', index: 0, id: undefined, name: undefined, args: '1}' },
      { type: 'finish', reason: 'tool_calls' },
    ]);
  });

  it('the structured-answer tool streams its input as text, and its tool_use end is a plain stop', () => {
    const { out } = decode([
      start,
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'tool_use', id: 't', name: STRUCTURED_TOOL },
      },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"x":1}' } },
      stop('tool_use', 3),
    ]);
    assert.deepEqual(out.slice(1), [
      { type: 'text', text: '{"x":1}' },
      { type: 'finish', reason: 'stop' },
    ]);
  });

  it('message_stop with no message_delta before it still finishes the answer', () => {
    const { out } = decode([start, text('a'), { type: 'message_stop' }]);
    assert.deepEqual(out.slice(-2), [
      { type: 'finish', reason: 'stop' },
      { type: 'usage', usage: { prompt_tokens: 9, completion_tokens: 0, total_tokens: 9 } },
    ]);
  });

  it('an error event is the upstream’s failure (overloaded: 529); a body ending early is a protocol error', () => {
    assert.throws(
      () => decode([start, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }]),
      (error) => error instanceof ProviderError && error.status === 529 && error.message === 'Overloaded',
    );
    assert.throws(
      () => anthropicDecoder().end([]),
      (error) => error instanceof ProviderError && error.failure === 'protocol',
    );
  });
});

describe('textDeltaOf (a text_delta read off its bytes)', () => {
  const bytes = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));

  it('reads the text of Anthropic’s own form, escapes and all, as JSON.parse would', () => {
    for (const value of ['', 'Hello', ' t12', 'é ✓ 😀', 'quote " and \\ and \n and \u0001 and \u2028'])
      assert.equal(textDeltaOf(bytes(text(value))), value, JSON.stringify(value));
    assert.equal(textDeltaOf(bytes({ ...text('x'), index: 12 })), 'x');
  });

  it('leaves anything else to the parse: other events, other forms, malformed text', () => {
    const other = [
      bytes({
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'input_json_delta', partial_json: 'x' },
      }),
      bytes({ index: 0, type: 'content_block_delta', delta: { type: 'text_delta', text: 'x' } }),
      Buffer.from('{"type":"content_block_delta", "index":0,"delta":{"type":"text_delta","text":"x"}}'),
      Buffer.from('{"type":"content_block_delta","index":01,"delta":{"type":"text_delta","text":"x"}}'),
      Buffer.from('{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"x"}}'),
      Buffer.from('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"b"}}'),
      Buffer.from('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\\"}}'),
      Buffer.from('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\\q"}}'),
      Buffer.from('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\nb"}}'),
      Buffer.from(
        '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"},"usage":1}',
      ),
      Buffer.from('{"type":"content_block_delta","index":'),
    ];
    for (const data of other) assert.equal(textDeltaOf(data), undefined, data.toString());
  });
});

describe('quietEvent (events that make nothing, skipped off their bytes)', () => {
  it('skips a ping, a block’s end and an empty text block’s start in Anthropic’s form, nothing else', () => {
    const quiet = [
      '{"type":"ping"}',
      '{"type":"content_block_stop","index":0}',
      '{"type":"content_block_stop","index":12}',
      '{"type":"content_block_start","index":3,"content_block":{"type":"text","text":""}}',
    ];
    for (const data of quiet) assert.equal(quietEvent(Buffer.from(data)), true, data);
    const other = [
      '{"type": "ping"}',
      '{"type":"pong"}',
      '{"type":"message_stop"}',
      '{"type":"content_block_stop","index":01}',
      '{"type":"content_block_stop","index":}',
      '{"type":"content_block_stop","index":0,"x":1}',
      '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Hi"}}',
      '{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"n"}}',
      '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}} ',
    ];
    for (const data of other) assert.equal(quietEvent(Buffer.from(data)), false, data);
  });
});
