/** The OpenAI chat-completion convention is both our public wire format and the canonical form inside. */

export type Role = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: Role;
  /** Text content (text parts joined); null for an assistant turn that only calls tools. */
  content: string | null;
  name?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

export interface ToolDefinition {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

/** `response_format`: free text, any JSON object, or an instance of the given JSON Schema. */
export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | {
      type: 'json_schema';
      json_schema: { name: string; description?: string; schema: Record<string, unknown>; strict?: boolean };
    };

export type ToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

/** A validated chat request: typed fields for the gateway, and the body as sent for pass-through. */
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  stream: boolean;
  /** The client asked for a final usage chunk (`stream_options.include_usage`). */
  includeUsage: boolean;
  /** `max_tokens` (or `max_completion_tokens`) as sent; undefined when absent. */
  maxTokens: number | undefined;
  /** As sent, or the default (the spec's 0.7, or the deployment's); undefined when its policy drops it. */
  temperature: number | undefined;
  topP: number | undefined;
  stop: string[] | undefined;
  tools: ToolDefinition[] | undefined;
  toolChoice: ToolChoice | undefined;
  /** Structured output asked for; undefined when absent or `{"type":"text"}`. */
  responseFormat?: ResponseFormat | undefined;
  /** The request body exactly as the client sent it (fields the spec does not list included). */
  body: Record<string, unknown>;
}

/**
 * Token counts on OpenAI's convention: `prompt_tokens` counts every prompt token (cached and cache-written ones
 * included), `completion_tokens` every generated one (reasoning included); the details say which kinds they hold.
 */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: PromptTokensDetails | null;
  completion_tokens_details?: CompletionTokensDetails | null;
}

export interface PromptTokensDetails {
  /** Read from the upstream's prompt cache. */
  cached_tokens?: number;
  /** Written to the upstream's prompt cache (OpenRouter's name), any lifetime. */
  cache_write_tokens?: number;
  /** Of `cache_write_tokens`, those written for an hour (Anthropic's longer, dearer lifetime). */
  cache_write_1h_tokens?: number;
  [extra: string]: unknown;
}

export interface CompletionTokensDetails {
  /** Hidden reasoning, billed as output. */
  reasoning_tokens?: number;
  [extra: string]: unknown;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: {
    index: number;
    message: { role: 'assistant'; content: string | null; tool_calls?: ToolCall[]; refusal?: string | null };
    finish_reason: FinishReason | null;
    logprobs?: unknown;
  }[];
  usage?: Usage;
  [extra: string]: unknown;
}

export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

export interface ChatChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: {
    index: number;
    delta: {
      role?: 'assistant';
      content?: string | null;
      tool_calls?: ToolCallDelta[];
      refusal?: string | null;
    };
    finish_reason: FinishReason | null;
    logprobs?: unknown;
  }[];
  usage?: Usage | null;
  [extra: string]: unknown;
}
