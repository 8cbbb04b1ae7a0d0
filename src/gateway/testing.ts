import type { ChatRequest } from './chat-types.ts';
import type { TextSink } from './stream-sink.ts';

/** A parsed chat request for unit tests: one user message to model-b at the spec's 0.7, the given fields over it. */
export const chatRequestOf = (fields: Partial<ChatRequest> = {}): ChatRequest => ({
  model: 'model-b',
  messages: [{ role: 'user', content: 'hi' }],
  stream: false,
  includeUsage: false,
  maxTokens: undefined,
  temperature: 0.7,
  topP: undefined,
  stop: undefined,
  tools: undefined,
  toolChoice: undefined,
  body: {},
  ...fields,
});

/** A text sink for unit tests that keeps each write as text (`writes`), and all of them joined (`text()`). */
export function recordingSink(): TextSink & { writes: string[]; text: () => string } {
  const writes: string[] = [];
  return {
    writes,
    text: () => writes.join(''),
    open() {},
    write(data) {
      writes.push(data.toString());
      return true;
    },
    drain: () => Promise.resolve(),
    end() {},
    closed: false,
    onClose() {},
  };
}
