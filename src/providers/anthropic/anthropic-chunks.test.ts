import assert from 'node:assert/strict';
import { after, before, describe, it, mock } from 'node:test';
import type { ChatChunk, Usage } from '../../core/chat-types.ts';
import { type PassChunk, RawChunk, RawText } from '../../core/raw-chunk.ts';
import type { StreamEvent } from '../../core/stream-event.ts';
import { chatCompletionsSink } from '../../http/sse-sink.ts';
import { ProviderError } from '../../core/provider-error.ts';
import { DONE } from '../upstream-http.ts';
import { anthropicChunks } from './anthropic-chunks.ts';
import { anthropicDecoder } from './anthropic-provider.ts';
import { STRUCTURED_TOOL } from './convert-anthropic.ts';
import { recordingSink } from '../../gateway/testing.ts';

interface Relayed {
  /** What the client got. */
  written: string;
  /** The upstream's usage, as metered. */
  usage: Usage | undefined;
  /** The text metered (for a count when there is no usage). */
  generated: string;
  ended: boolean;
}

const total = (usage: Usage | undefined): Usage =>
  usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

/** The events through the canonical path: the decoder's events, metered, written by the sink's `events`. */
function canonical(events: Buffer[], includeUsage: boolean): Relayed {
  const decoder = anthropicDecoder();
  const text = recordingSink();
  const sink = chatCompletionsSink(text, includeUsage, 'public-model');
  const relayed: Relayed = { written: '', usage: undefined, generated: '', ended: false };
  for (const data of events) {
    const batch: StreamEvent[] = [];
    relayed.ended = decoder.event(data, batch);
    for (const event of batch) {
      if (event.type === 'text') relayed.generated += event.text;
      if (event.type === 'tool') relayed.generated += (event.name ?? '') + event.args;
      if (event.type === 'usage') relayed.usage = event.usage;
    }
    if (batch.length > 0) sink.events(batch);
    if (relayed.ended) break;
  }
  if (relayed.ended) sink.complete(total(relayed.usage));
  relayed.written = text.text();
  return relayed;
}

/** The same events through the fast path: chunks metered as ChatGateway's #passThrough does, then written. */
function passedThrough(events: Buffer[], includeUsage: boolean): Relayed & { chunks: PassChunk[] } {
  const decode = anthropicChunks(anthropicDecoder());
  const text = recordingSink();
  const sink = chatCompletionsSink(text, includeUsage, 'public-model');
  const rawText = new RawText();
  const relayed = { written: '', usage: undefined, generated: '', ended: false, chunks: [] as PassChunk[] };
  for (const data of events) {
    const batch: PassChunk[] = [];
    const chunk = decode(data, batch);
    if (chunk !== undefined && chunk !== DONE) batch.push(chunk);
    for (const one of batch) {
      relayed.chunks.push(one);
      if (one instanceof RawChunk) rawText.add(one);
      else {
        relayed.generated += rawText.take();
        meter(one, relayed);
      }
    }
    if (batch.length > 0) sink.passThrough!(batch, 'public-model');
    if (chunk === DONE) {
      relayed.ended = true;
      break;
    }
  }
  relayed.generated += rawText.take();
  if (relayed.ended) sink.complete(total(relayed.usage));
  relayed.written = text.text();
  return relayed;
}

function meter(chunk: ChatChunk, relayed: Relayed): void {
  chunk.model = 'public-model';
  if (chunk.usage) relayed.usage = chunk.usage;
  for (const choice of chunk.choices) {
    if (typeof choice.delta.content === 'string') relayed.generated += choice.delta.content;
    for (const call of choice.delta.tool_calls ?? [])
      relayed.generated += (call.function?.name ?? '') + (call.function?.arguments ?? '');
  }
}

const data = (value: object): Buffer => Buffer.from(JSON.stringify(value));
const start = (usage: object = { input_tokens: 9, output_tokens: 1 }): Buffer =>
  data({ type: 'message_start', message: { id: 'msg_1', model: 'claude', usage } });
const blockStart = (index: number, block: object): Buffer =>
  data({ type: 'content_block_start', index, content_block: block });
const text = (value: string, index = 0): Buffer =>
  data({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: value } });
const json = (partial: string, index: number): Buffer =>
  data({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: partial } });
const blockStop = (index = 0): Buffer => data({ type: 'content_block_stop', index });
const messageDelta = (reason: string | null, usage: object = { output_tokens: 3 }): Buffer =>
  data({ type: 'message_delta', delta: { stop_reason: reason, stop_sequence: null }, usage });
const ping = data({ type: 'ping' });
const stop = data({ type: 'message_stop' });

const streams: [string, Buffer[]][] = [
  [
    'a plain text answer, with pings',
    [
      start(),
      blockStart(0, { type: 'text', text: '' }),
      ping,
      text('Hel'),
      text('lo'),
      blockStop(),
      messageDelta('end_turn'),
      stop,
    ],
  ],
  [
    'escapes, non-ASCII, a text in the block start, an empty delta, a long delta',
    [
      start(),
      blockStart(0, { type: 'text', text: 'Pre' }),
      text('a "quoted"\nline\t\\ and \u0001'),
      text('héllo wörld 😀 \u2028'),
      Buffer.from(
        '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\\u00e9\\/"}}',
      ),
      text(''),
      text('x'.repeat(300)),
      messageDelta('max_tokens'),
      stop,
    ],
  ],
  [
    'bytes that are not UTF-8, other spacing and member order',
    [
      start(),
      Buffer.concat([
        Buffer.from('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"bad '),
        Buffer.from([0xff, 0xc3]),
        Buffer.from('"}}'),
      ]),
      Buffer.from(
        '{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "spaced"}}',
      ),
      Buffer.from(
        '{"index":0,"type":"content_block_delta","delta":{"text":"reordered","type":"text_delta"}}',
      ),
      messageDelta('end_turn'),
      stop,
    ],
  ],
  [
    'tool calls beside text, the answer ending in tool_use',
    [
      start(),
      blockStart(0, { type: 'text', text: '' }),
      text('Let me look.'),
      blockStop(0),
      blockStart(1, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} }),
      json('{"city":', 1),
      json('"Paris"}', 1),
      blockStop(1),
      blockStart(2, { type: 'tool_use', id: 'toolu_2', name: 'get_time', input: {} }),
      json('{}', 2),
      messageDelta('tool_use', { output_tokens: 40 }),
      stop,
    ],
  ],
  [
    'the structured-answer tool: its input as text',
    [
      start(),
      blockStart(0, { type: 'tool_use', id: 't', name: STRUCTURED_TOOL, input: {} }),
      json('{"x":', 0),
      json('1}', 0),
      json('', 0),
      messageDelta('tool_use'),
      stop,
    ],
  ],
  [
    'message_stop with no message_delta; cache tokens in the prompt',
    [
      start({
        input_tokens: 5,
        cache_creation_input_tokens: 100,
        cache_read_input_tokens: 2000,
        output_tokens: 1,
      }),
      text('Hi'),
      stop,
    ],
  ],
  [
    'usage cumulative in message_delta (input and cache tokens there too)',
    [
      start({ input_tokens: 5, output_tokens: 1 }),
      text('Hi'),
      messageDelta('end_turn', { input_tokens: 7, cache_read_input_tokens: 30, output_tokens: 12 }),
      stop,
    ],
  ],
  ['text before message_start', [text('early'), start(), text('late'), messageDelta('end_turn'), stop]],
  ['a stream cut before message_stop', [start(), text('Hi'), blockStop()]],
];

describe('anthropicChunks: a Messages stream as pass-through chunks', () => {
  before(() => mock.timers.enable({ apis: ['Date'], now: 1_764_000_000_000 }));
  after(() => mock.timers.reset());

  for (const [name, events] of streams)
    for (const includeUsage of [false, true])
      it(`${name}${includeUsage ? ', with usage asked for' : ''}: the canonical path's bytes and metering`, () => {
        const expected = canonical(events, includeUsage);
        const actual = passedThrough(events, includeUsage);
        assert.equal(actual.written, expected.written);
        assert.deepEqual(actual.usage, expected.usage);
        assert.equal(actual.generated, expected.generated);
        assert.equal(actual.ended, expected.ended);
      });

  it('a text delta in Anthropic’s form is a raw chunk made off its bytes, escapes and UTF-8 checked', () => {
    const { chunks } = passedThrough([start(), text('Hel'), text('lo wörld'), stop], false);
    const texts = chunks.slice(1, 3);
    assert.ok(texts.every((chunk) => chunk instanceof RawChunk));
    assert.deepEqual(
      texts.map((chunk) => chunk.text),
      ['Hel', 'lo wörld'],
    );
    // The usage is a parsed chunk (the gateway meters its fields).
    assert.deepEqual((chunks.at(-1) as ChatChunk).usage, {
      prompt_tokens: 9,
      completion_tokens: 1,
      total_tokens: 10,
    });
  });

  it('an error event is the upstream’s failure, as on the canonical path; a malformed event a protocol error', () => {
    const decode = anthropicChunks(anthropicDecoder());
    const out: PassChunk[] = [];
    decode(start(), out);
    assert.throws(
      () => decode(data({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }), out),
      (error) => error instanceof ProviderError && error.status === 529 && error.message === 'Overloaded',
    );
    assert.throws(
      () => decode(Buffer.from('{oops'), out),
      (error) => error instanceof ProviderError && error.failure === 'protocol',
    );
  });
});
