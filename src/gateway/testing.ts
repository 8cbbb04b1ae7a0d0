import type { ChatRequest } from './chat-types.ts';

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
