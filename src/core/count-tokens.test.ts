import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChatMessage, ToolDefinition } from './chat-types.ts';
import { countPromptTokens, countPromptTokensYielding, countTextTokens } from './count-tokens.ts';

const word = (n: number): string => 'lorem ipsum dolor sit amet '.repeat(n);

describe('the prompt count on the request path', () => {
  it('gives the one-go count for short prompts, long ones and prompts with tools', async () => {
    const tools: ToolDefinition[] = [
      { type: 'function', function: { name: 'lookup', description: word(3) } },
    ];
    const prompts: [ChatMessage[], ToolDefinition[] | undefined][] = [
      [[{ role: 'user', content: 'Say hello in five words.' }], undefined],
      [
        [
          { role: 'system', content: word(4) },
          { role: 'user', content: 'hi', name: 'ada' },
          { role: 'assistant', content: null },
          { role: 'user', content: '' },
        ],
        undefined,
      ],
      [[{ role: 'user', content: word(200) }], undefined],
      [[{ role: 'user', content: 'hi' }], tools],
      [
        [
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
          { role: 'tool', content: 'done', tool_call_id: 'c' },
        ],
        undefined,
      ],
    ];
    for (const [messages, withTools] of prompts)
      assert.equal(
        await countPromptTokensYielding(messages, withTools, Infinity),
        countPromptTokens(messages, withTools),
      );
  });

  it('stops past the limit after the message that crossed it, as the long path does', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: word(10) },
      { role: 'user', content: word(10) },
    ];
    const first = countPromptTokens(messages.slice(0, 1));
    assert.equal(countPromptTokensYielding(messages, undefined, first - 1), first);
  });
});

describe('special tokens’ spellings in a text', () => {
  it('are counted as ordinary text, never refused', () => {
    const text = 'say <|endoftext|> and <|im_start|> please';
    assert.ok(countTextTokens(text) > countTextTokens('say  and  please'));
    const messages: ChatMessage[] = [{ role: 'user', content: text }];
    assert.equal(countPromptTokensYielding(messages, undefined, Infinity), countPromptTokens(messages));
  });
});
