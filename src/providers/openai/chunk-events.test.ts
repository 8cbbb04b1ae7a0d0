import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChatChunk } from '../../core/chat-types.ts';
import type { StreamEvent } from '../../core/stream-event.ts';
import { chunkEvents } from './chunk-events.ts';

const chunk = (choices: ChatChunk['choices'], extra: Partial<ChatChunk> = {}): ChatChunk => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 5,
  model: 'up',
  choices,
  ...extra,
});

describe('a chat-completion chunk as canonical events', () => {
  it('the first chunk starts the answer; content, tool-call deltas, finish reason and usage follow in order', () => {
    const out: StreamEvent[] = [];
    chunkEvents(
      chunk([{ index: 0, delta: { role: 'assistant', content: 'Hi' }, finish_reason: null }]),
      out,
      false,
    );
    chunkEvents(
      chunk([
        {
          index: 0,
          delta: {
            tool_calls: [
              { index: 0, id: 'call_1', type: 'function', function: { name: 'get', arguments: '{' } },
              { index: 0, function: { arguments: '}' } },
            ],
          },
          finish_reason: 'tool_calls',
        },
      ]),
      out,
      true,
    );
    const usage = { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 };
    chunkEvents(chunk([], { usage }), out, true);
    assert.deepEqual(out, [
      { type: 'start', id: 'chatcmpl-1', created: 5 },
      { type: 'text', text: 'Hi' },
      { type: 'tool', index: 0, id: 'call_1', name: 'get', args: '{' },
      { type: 'tool', index: 0, id: undefined, name: undefined, args: '}' },
      { type: 'finish', reason: 'tool_calls' },
      { type: 'usage', usage },
    ]);
  });

  it('what carries nothing gives nothing: null content, a choice without delta, usage null', () => {
    const out: StreamEvent[] = [];
    const bare = chunk([{ index: 0, delta: { content: null }, finish_reason: null }], { usage: null });
    chunkEvents(bare, out, true);
    const noDelta = chunk([{ index: 0, finish_reason: null } as unknown as ChatChunk['choices'][number]]);
    chunkEvents(noDelta, out, true);
    assert.deepEqual(out, []);
  });
});
