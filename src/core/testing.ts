import type { ChatBody, ChatRequest, ResponseFormat, ToolChoice, ToolDefinition } from './chat-types.ts';

/** What a unit test sets on a request: its fields, and the known parameters by their typed names. */
export interface RequestFields extends Partial<Omit<ChatRequest, 'body'>> {
  body?: ChatBody;
  maxTokens?: number;
  temperature?: number | undefined;
  topP?: number;
  stop?: string[];
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  responseFormat?: ResponseFormat;
}

/**
 * A parsed chat request for unit tests: one user message to model-b at the spec's 0.7, the given fields over it.
 * Known parameters given by their typed names land in the body under their OpenAI names, where a real request
 * holds them.
 */
export function chatRequestOf(fields: RequestFields = {}): ChatRequest {
  const { body, maxTokens, topP, stop, tools, toolChoice, responseFormat, temperature, ...rest } = fields;
  const known: ChatBody = {};
  const sentTemperature = 'temperature' in fields ? temperature : 0.7;
  if (sentTemperature !== undefined) known.temperature = sentTemperature;
  if (maxTokens !== undefined) known.max_tokens = maxTokens;
  if (topP !== undefined) known.top_p = topP;
  if (stop !== undefined) known.stop = stop;
  if (tools !== undefined) known.tools = tools;
  if (toolChoice !== undefined) known.tool_choice = toolChoice;
  if (responseFormat !== undefined) known.response_format = responseFormat;
  return {
    model: 'model-b',
    messages: [{ role: 'user', content: 'hi' }],
    stream: false,
    includeUsage: false,
    ...rest,
    body: { ...known, ...body },
  };
}
