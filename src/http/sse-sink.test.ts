import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChatChunk, Usage } from '../core/chat-types.ts';
import type { StreamEvent } from '../core/stream-event.ts';
import type { PassChunk } from '../core/raw-chunk.ts';
import { scanChunk } from '../providers/openai/scan-chunk.ts';
import { chatCompletionsSink } from './sse-sink.ts';
import { recordingSink } from '../gateway/testing.ts';

const raw = (fields: Record<string, unknown>): PassChunk =>
  scanChunk(
    Buffer.from(
      JSON.stringify({
        id: 'c1',
        object: 'chat.completion.chunk',
        created: 5,
        model: 'up-model',
        choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: null }],
        ...fields,
      }),
    ),
  )!;

const events = (write: string): unknown[] =>
  write
    .split('\n\n')
    .filter(Boolean)
    .map((event) => {
      assert.ok(event.startsWith('data: '), event);
      const data = event.slice(6);
      return data === '[DONE]' ? data : (JSON.parse(data) as unknown);
    });

/** A usage chunk as the fast path hands it over parsed (`model` already the public id). */
const parsedUsageChunk = (usage: Usage, extra: Record<string, unknown> = {}): ChatChunk => ({
  id: 'c1',
  object: 'chat.completion.chunk',
  created: 5,
  model: 'public',
  choices: [],
  usage,
  ...extra,
});

describe('chatCompletionsSink on the fast path', () => {
  it('writes what one read brought in one write, each chunk with the public model id', () => {
    const text = recordingSink();
    const sink = chatCompletionsSink(text, true, 'public');
    assert.equal(sink.passThrough!([raw({}), raw({ usage: null })], 'public'), true);
    assert.equal(text.writes.length, 1);
    const [a, b] = events(text.writes[0]!) as Record<string, unknown>[];
    assert.equal(a!['model'], 'public');
    assert.equal(b!['model'], 'public');
    assert.equal(b!['usage'], null, 'a client that asked for usage gets the chunk as the upstream sent it');
  });

  it('leaves out "usage": null for a client that did not ask for usage, as the canonical path does', () => {
    const text = recordingSink();
    const sink = chatCompletionsSink(text, false, 'public');
    sink.passThrough!([raw({ usage: null })], 'public');
    const [chunk] = events(text.writes[0]!) as Record<string, unknown>[];
    assert.equal('usage' in chunk!, false);
    assert.deepEqual(chunk!['choices'], [{ index: 0, delta: { content: 'hi' }, finish_reason: null }]);
  });

  it('copies each raw chunk exactly, whatever the public id is longer or shorter and wherever usage sits', () => {
    // Raw chunks of several layouts in one batch, between parsed ones: usage before the model, after it, first,
    // none; an upstream model id shorter and longer than the public one.
    const layouts: Record<string, unknown>[] = [
      { usage: null, id: 'a', model: 'm', choices: [{ index: 0, delta: { content: 'x' } }] },
      { id: 'b', model: 'a-much-longer-upstream-model-id', choices: [{ index: 0, delta: {} }], usage: null },
      {
        id: 'c',
        usage: null,
        created: 7,
        model: 'mid',
        choices: [{ index: 0, delta: { content: 'é\\n"' } }],
      },
      { id: 'd', model: '', choices: [{ index: 1, delta: { content: null } }], tail: [1, 2, { z: true }] },
    ];
    for (const publicModel of ['p', 'public-model-with-a-long-name']) {
      for (const includeUsage of [false, true]) {
        const text = recordingSink();
        const sink = chatCompletionsSink(text, includeUsage, publicModel);
        const usage = { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 };
        const batch: PassChunk[] = [
          ...layouts.map((fields) => scanChunk(Buffer.from(JSON.stringify(fields)))!),
          { ...parsedUsageChunk(usage), model: publicModel },
          ...layouts.map((fields) => scanChunk(Buffer.from(` ${JSON.stringify(fields, null, 1)}`))!),
        ];
        assert.ok(batch.every((chunk) => chunk !== undefined));
        sink.passThrough!(batch, publicModel);
        const expected = (fields: Record<string, unknown>): Record<string, unknown> => {
          const chunk: Record<string, unknown> = { ...fields, model: publicModel };
          if (!includeUsage) delete chunk['usage'];
          return chunk;
        };
        assert.equal(text.writes.length, 1);
        assert.deepEqual(events(text.writes[0]!), [
          ...layouts.map(expected),
          ...(includeUsage ? [{ ...parsedUsageChunk(usage), model: publicModel }] : []),
          ...layouts.map(expected),
        ]);
        // Byte for byte: only the model value changed, and `"usage":null` with its comma left out.
        const first = text.writes[0]!.split('\n\n')[0]!;
        const upstream = JSON.stringify(layouts[0]).replace(
          '"model":"m"',
          `"model":${JSON.stringify(publicModel)}`,
        );
        assert.equal(first, `data: ${includeUsage ? upstream : upstream.replace('"usage":null,', '')}`);
      }
    }
  });

  it('encodes parsed chunks by the canonical rules in the same write: the usage chunk once, when asked', () => {
    const usage = { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 };
    const usageChunk = (): ChatChunk => parsedUsageChunk(usage);
    const asked = recordingSink();
    const withUsage = chatCompletionsSink(asked, true, 'public');
    withUsage.passThrough!([raw({}), usageChunk()], 'public');
    withUsage.complete(usage);
    assert.deepEqual(events(asked.writes[0]!).length, 2);
    assert.deepEqual(asked.writes.slice(1), ['data: [DONE]\n\n'], 'no second usage chunk');

    const notAsked = recordingSink();
    const without = chatCompletionsSink(notAsked, false, 'public');
    without.passThrough!([raw({}), usageChunk()], 'public');
    without.complete(usage);
    assert.equal(events(notAsked.writes[0]!).length, 1, 'the usage-only chunk is not for this client');
  });

  it('makes up the usage chunk from a raw first chunk when the upstream sent none', () => {
    const text = recordingSink();
    const sink = chatCompletionsSink(text, true, 'public');
    sink.passThrough!([raw({})], 'public');
    const usage = { prompt_tokens: 4, completion_tokens: 1, total_tokens: 5 };
    sink.complete(usage);
    assert.deepEqual(events(text.writes[1]!), [
      { id: 'c1', object: 'chat.completion.chunk', created: 5, model: 'public', choices: [], usage },
    ]);
  });

  it('writes nothing for a batch with nothing for this client', () => {
    const text = recordingSink();
    const sink = chatCompletionsSink(text, false, 'public');
    const empty: ChatChunk = {
      id: 'c',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'p',
      choices: [],
    };
    assert.equal(sink.passThrough!([empty], 'public'), true);
    assert.equal(text.writes.length, 0);
  });

  it('writes a parsed chunk as the upstream sent it but for the model (fields it does not know included)', () => {
    const text = recordingSink();
    const sink = chatCompletionsSink(text, true, 'public');
    const usage = { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, prompt_tokens_details: {} };
    const parsed = parsedUsageChunk(usage, { system_fingerprint: 'fp_1' });
    sink.passThrough!([parsed], 'public');
    assert.deepEqual(events(text.writes[0]!), [parsed]);
  });
});

/** The chunk the chat-completions protocol has for each event, as an object (what the bytes must parse to). */
const chunkOf = (choices: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  id: 'msg_1',
  object: 'chat.completion.chunk',
  created: 7,
  model: 'public',
  choices,
  ...extra,
});
const choice = (delta: unknown, finish: string | null = null) => [{ index: 0, delta, finish_reason: finish }];

describe('chatCompletionsSink on the canonical events', () => {
  const usage: Usage = { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 };
  const start: StreamEvent = { type: 'start', id: 'msg_1', created: 7 };

  it('encodes each event as its chunk, byte for byte what JSON.stringify of that chunk gives, in one write', () => {
    const text = recordingSink();
    const sink = chatCompletionsSink(text, true, 'public');
    const batch: StreamEvent[] = [
      start,
      { type: 'text', text: 'Hi "there"\n\u2028é' },
      { type: 'tool', index: 0, id: 'toolu_1', name: 'get_weather', args: '' },
      { type: 'tool', index: 0, id: undefined, name: undefined, args: '{"city":' },
      { type: 'finish', reason: 'tool_calls' },
      { type: 'usage', usage },
    ];
    assert.equal(sink.events(batch), true);
    assert.equal(text.writes.length, 1);
    const expected = [
      chunkOf(choice({ role: 'assistant', content: '' })),
      chunkOf(choice({ content: 'Hi "there"\n\u2028é' })),
      chunkOf(
        choice({
          tool_calls: [
            { index: 0, id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '' } },
          ],
        }),
      ),
      chunkOf(choice({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] })),
      chunkOf(choice({}, 'tool_calls')),
      chunkOf([], { usage }),
    ];
    assert.equal(text.writes[0], expected.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join(''));
    sink.complete(usage);
    sink.end();
    assert.deepEqual(
      text.writes.slice(1),
      ['data: [DONE]\n\n'],
      'the upstream usage went out: no second one',
    );
  });

  it('leaves the usage out for a client that did not ask, and writes nothing for a batch of only that', () => {
    const text = recordingSink();
    const sink = chatCompletionsSink(text, false, 'public');
    sink.events([start]);
    assert.equal(sink.events([{ type: 'usage', usage }]), true);
    sink.complete(usage);
    assert.deepEqual(text.writes.slice(1), ['data: [DONE]\n\n']);
  });

  it('makes up the usage chunk from the start event when the upstream sent none', () => {
    const text = recordingSink();
    const sink = chatCompletionsSink(text, true, 'public');
    sink.events([start, { type: 'text', text: 'a' }]);
    sink.complete(usage);
    assert.deepEqual(events(text.writes[1]!), [chunkOf([], { usage })]);
  });

  it('answers false when the client is not keeping up', () => {
    const text = { ...recordingSink(), write: () => false };
    const sink = chatCompletionsSink(text, false, 'public');
    assert.equal(sink.events([start]), false);
  });
});
