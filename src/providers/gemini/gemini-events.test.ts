import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { StreamEvent } from '../../core/stream-event.ts';
import { ProviderError } from '../../core/provider-error.ts';
import { geminiDecoder } from './gemini-provider.ts';

const decode = (events: object[]): StreamEvent[] => {
  const decoder = geminiDecoder();
  const out: StreamEvent[] = [];
  for (const event of events) assert.equal(decoder.event(Buffer.from(JSON.stringify(event)), out), false);
  decoder.end(out);
  return out;
};

const usageMetadata = { promptTokenCount: 4, candidatesTokenCount: 3 };

describe('the Gemini stream as canonical events', () => {
  it('start with the first response, its text, the finish reason, then the usage once the body ends', () => {
    const out = decode([
      { candidates: [{ content: { role: 'model', parts: [{ text: 'Hel' }] } }], responseId: 'r1' },
      {
        candidates: [{ content: { role: 'model', parts: [{ text: 'lo' }] }, finishReason: 'STOP' }],
        usageMetadata,
      },
    ]);
    assert.equal(out[0]?.type === 'start' && out[0].id, 'chatcmpl-r1');
    assert.deepEqual(out.slice(1), [
      { type: 'text', text: 'Hel' },
      { type: 'text', text: 'lo' },
      { type: 'finish', reason: 'stop' },
      { type: 'usage', usage: { prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 } },
    ]);
  });

  it('a function call is one whole tool event (id, name, arguments); the finish is tool_calls', () => {
    const out = decode([
      {
        candidates: [
          {
            content: { role: 'model', parts: [{ functionCall: { id: 'f1', name: 'get', args: { a: 1 } } }] },
            finishReason: 'STOP',
          },
        ],
        usageMetadata,
      },
    ]);
    assert.deepEqual(out.slice(1, 3), [
      { type: 'tool', index: 0, id: 'f1', name: 'get', args: '{"a":1}' },
      { type: 'finish', reason: 'tool_calls' },
    ]);
  });

  it('an in-band error is the upstream’s failure; a body that ends with no finish reason is a protocol error', () => {
    assert.throws(
      () => decode([{ error: { code: 429, message: 'quota' } }]),
      (error) => error instanceof ProviderError && error.status === 429 && error.message === 'quota',
    );
    assert.throws(
      () => decode([{ candidates: [{ content: { parts: [{ text: 'a' }] } }] }]),
      (error) => error instanceof ProviderError && error.failure === 'protocol',
    );
  });
});
