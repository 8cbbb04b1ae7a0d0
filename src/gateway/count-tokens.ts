import { countTokens } from 'gpt-tokenizer';
import type { ChatMessage, ToolDefinition } from './chat-types.ts';

// The OpenAI convention's framing: each message costs 3 tokens around its content, a reply is primed with 3.
const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_NAME = 1;
const REPLY_PRIMING = 3;

/** Tokens of a text (o200k_base, the tokenizer of current OpenAI models). */
export function countTextTokens(text: string): number {
  return text.length === 0 ? 0 : countTokens(text);
}

/** Estimated prompt tokens of a chat request: messages, their framing, and tool definitions. */
export function countPromptTokens(
  messages: readonly ChatMessage[],
  tools?: readonly ToolDefinition[],
): number {
  let total = REPLY_PRIMING;
  for (const message of messages) {
    total += TOKENS_PER_MESSAGE + countTextTokens(message.role);
    if (message.content) total += countTextTokens(message.content);
    if (message.name) total += TOKENS_PER_NAME + countTextTokens(message.name);
    if (message.tool_calls) {
      for (const call of message.tool_calls)
        total += countTextTokens(call.function.name) + countTextTokens(call.function.arguments) + 3;
    }
  }
  if (tools && tools.length > 0) total += countTextTokens(JSON.stringify(tools));
  return total;
}
