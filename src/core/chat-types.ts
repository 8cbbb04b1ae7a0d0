/** The OpenAI chat-completion convention is both our public wire format and the canonical form inside. */

export type Role = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/**
 * A prompt-cache breakpoint (Anthropic's `cache_control`): the prompt up to and including the marked block is
 * cached, for five minutes or, with `ttl: "1h"`, an hour.
 */
export interface CacheControl {
  type: 'ephemeral';
  ttl?: '5m' | '1h';
}

/** One text part of a message as sent, with the cache mark it carried. */
export interface TextPart {
  text: string;
  cache_control?: CacheControl;
}

export interface ChatMessage {
  role: Role;
  /** Text content (text parts joined); null for an assistant turn that only calls tools. */
  content: string | null;
  /**
   * The text parts as sent, kept only when one of them carries a cache mark: an upstream that caches by
   * breakpoint (Anthropic) needs the parts' edges and marks; every other adapter reads `content`.
   */
  cacheParts?: TextPart[];
  name?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

export interface ToolDefinition {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
  /** A prompt-cache breakpoint after this tool (Anthropic's; OpenRouter's convention on the chat door). */
  cache_control?: CacheControl;
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

/**
 * A chat request's body in the OpenAI vocabulary: the fields the gateway reads typed (as sent, once
 * parseChatRequest has validated them; null is "not set"), every other field as the client sent it.
 */
export interface ChatBody {
  temperature?: number | null;
  top_p?: number | null;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  stop?: string | string[] | null;
  tools?: ToolDefinition[] | null;
  tool_choice?: ToolChoice | null;
  response_format?: ResponseFormat | { type: 'text' } | null;
  [field: string]: unknown;
}

/**
 * A validated chat request, held once: `body` is the request in the OpenAI vocabulary, the one form a
 * deployment's parameter policy edits and every adapter builds its upstream body from (through `knownParams`).
 * `messages` is the canonical reading of `body.messages`, which no policy touches (a gateway field).
 */
export interface ChatRequest {
  /** The public model id. */
  model: string;
  messages: ChatMessage[];
  stream: boolean;
  /** The client asked for a final usage chunk (`stream_options.include_usage`). */
  includeUsage: boolean;
  body: ChatBody;
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
    /** The stop sequence that ended the answer, where the upstream says (vLLM's field; Anthropic's stop_sequence). */
    stop_reason?: string | number | null;
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
    stop_reason?: string | number | null;
    logprobs?: unknown;
  }[];
  usage?: Usage | null;
  [extra: string]: unknown;
}
