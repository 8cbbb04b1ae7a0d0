import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChatBody } from '../../core/chat-types.ts';
import { withoutCacheMarks } from './openai-provider.ts';

describe('withoutCacheMarks', () => {
  it('returns the body itself when nothing is marked', () => {
    const body: ChatBody = {
      messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }] }],
      tools: [{ type: 'function', function: { name: 'f' } }],
    };
    assert.equal(withoutCacheMarks(body), body);
  });

  it('takes the marks off content parts and tools, and leaves the client body as it was', () => {
    const body: ChatBody = {
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'a', cache_control: { type: 'ephemeral' } }] },
        { role: 'user', content: 'hi' },
      ],
      tools: [{ type: 'function', function: { name: 'f' }, cache_control: { type: 'ephemeral', ttl: '1h' } }],
      prompt_cache_key: 'k',
    };
    const before = JSON.stringify(body);
    assert.deepEqual(withoutCacheMarks(body), {
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'a' }] },
        { role: 'user', content: 'hi' },
      ],
      tools: [{ type: 'function', function: { name: 'f' } }],
      prompt_cache_key: 'k',
    });
    assert.equal(JSON.stringify(body), before);
  });
});
