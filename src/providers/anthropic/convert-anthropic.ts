import type {
  CacheControl,
  ChatCompletion,
  ChatMessage,
  ChatRequest,
  FinishReason,
  ToolCall,
  ToolChoice,
  Usage,
} from '../../core/chat-types.ts';
import { knownParams } from '../../core/known-params.ts';
import { ProviderError } from '../../core/provider-error.ts';
import { kindsOfAnthropic, usageOfKinds } from '../../billing/token-kinds.ts';

/**
 * The tool a structured answer comes through: the Messages API has no `response_format`, so the schema is
 * offered as this tool's input_schema and the tool is forced; its input is the answer, sent as content.
 */
export const STRUCTURED_TOOL = 'structured_answer';

/** A prompt-cache breakpoint, on any block that may carry one. */
interface Mark {
  cache_control?: CacheControl;
}

type TextBlock = { type: 'text'; text: string } & Mark;

type Block =
  | TextBlock
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | ({ type: 'tool_result'; tool_use_id: string; content: string } & Mark);

interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

export interface AnthropicUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation?: {
    ephemeral_5m_input_tokens?: number | null;
    ephemeral_1h_input_tokens?: number | null;
  } | null;
}

export interface AnthropicResponse {
  id: string;
  type: 'message';
  content: (
    | { type: 'text'; text: string }
    | { type: 'tool_use'; id: string; name: string; input: unknown }
    | { type: string }
  )[];
  model: string;
  stop_reason: string | null;
  stop_sequence?: string | null;
  usage: AnthropicUsage;
}

/** The canonical request as a Messages API body: system prompt apart, tools as tool_use/tool_result blocks. */
export function convertToAnthropicRequest(
  request: ChatRequest,
  upstreamModel: string,
  defaultMaxTokens: number,
  stream: boolean,
): Record<string, unknown> {
  const known = knownParams(request.body);
  const system = systemPrompt(request.messages);
  const messages: AnthropicMessage[] = [];
  for (const message of request.messages) {
    if (message.role === 'system' || message.role === 'developer') continue;
    const converted = convertMessage(message);
    const previous = messages.at(-1);
    // The Messages API alternates roles: consecutive turns of one role become one turn.
    if (previous && previous.role === converted.role) previous.content.push(...converted.content);
    else messages.push(converted);
  }
  const body: Record<string, unknown> = {
    model: upstreamModel,
    max_tokens: known.maxTokens ?? defaultMaxTokens,
    messages,
  };
  if (system.length > 0) body['system'] = system;
  // Anthropic's temperature runs 0–1; the convention's 0–2 is clamped to it.
  if (known.temperature !== undefined) body['temperature'] = Math.min(1, known.temperature);
  if (known.topP !== undefined) body['top_p'] = known.topP;
  if (known.stop) body['stop_sequences'] = known.stop;
  const tools: Record<string, unknown>[] = [];
  const userTools = known.tools && known.toolChoice !== 'none' ? known.tools : [];
  for (const tool of userTools) {
    tools.push({
      name: tool.function.name,
      ...(tool.function.description ? { description: tool.function.description } : {}),
      input_schema: tool.function.parameters ?? { type: 'object', properties: {} },
      ...markOf(tool.cache_control),
    });
  }
  let choice = userTools.length > 0 ? convertToolChoice(known.toolChoice) : undefined;
  const format = known.responseFormat;
  if (format) {
    const schema = format.type === 'json_schema' ? format.json_schema.schema : { type: 'object' };
    if (schema['type'] !== undefined && schema['type'] !== 'object')
      // A 400 the router passes on as the client's (never retried elsewhere).
      throw new ProviderError(
        'status',
        `${request.model} cannot honour response_format: its deployment takes only a JSON Schema whose root is an object`,
        { status: 400 },
      );
    tools.push({
      name: STRUCTURED_TOOL,
      description:
        format.type === 'json_schema'
          ? (format.json_schema.description ?? `Give the answer as ${format.json_schema.name}.`)
          : 'Give the answer as a JSON object.',
      input_schema: { type: 'object', ...schema },
    });
    // Alone it is forced; beside the client's tools the model must call one of them or answer through it.
    if (userTools.length === 0) choice = { type: 'tool', name: STRUCTURED_TOOL };
    else if (choice?.['type'] === 'auto') choice = { type: 'any' };
  }
  if (tools.length > 0) {
    body['tools'] = tools;
    if (choice) body['tool_choice'] = choice;
  }
  if (stream) body['stream'] = true;
  return body;
}

/**
 * `cache_control` as the Messages API takes it (type and ttl only), or nothing: the request's marks were
 * checked on arrival, but a deployment's policy may have edited `tools`, so anything else reads as unmarked.
 */
function markOf(mark: unknown): Mark {
  if (typeof mark !== 'object' || mark === null || (mark as CacheControl).type !== 'ephemeral') return {};
  const ttl = (mark as CacheControl).ttl;
  return { cache_control: ttl === '5m' || ttl === '1h' ? { type: 'ephemeral', ttl } : { type: 'ephemeral' } };
}

/** A message's text as blocks: one, or the parts as sent with their cache marks when it carries any. */
function textBlocks(message: ChatMessage): TextBlock[] {
  if (message.cacheParts)
    return message.cacheParts
      .filter((part) => part.text !== '' || part.cache_control)
      .map((part) => ({ type: 'text', text: part.text, ...markOf(part.cache_control) }));
  return message.content ? [{ type: 'text', text: message.content }] : [];
}

/**
 * The system and developer messages as the `system` field: one string, their texts joined; or, when one carries
 * a cache mark, text blocks that keep the marks where they were put.
 */
function systemPrompt(messages: ChatMessage[]): string | TextBlock[] {
  const system = messages.filter((message) => message.role === 'system' || message.role === 'developer');
  if (!system.some((message) => message.cacheParts))
    return system.map((message) => message.content ?? '').join('\n\n');
  return system.flatMap(textBlocks);
}

function convertMessage(message: ChatMessage): AnthropicMessage {
  if (message.role === 'tool') {
    const mark = message.cacheParts?.findLast((part) => part.cache_control)?.cache_control;
    return {
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: message.tool_call_id ?? '',
          content: message.content ?? '',
          ...markOf(mark),
        },
      ],
    };
  }
  const content: Block[] = textBlocks(message);
  for (const call of message.tool_calls ?? []) {
    content.push({
      type: 'tool_use',
      id: call.id,
      name: call.function.name,
      input: parseArguments(call.function.arguments),
    });
  }
  return { role: message.role === 'assistant' ? 'assistant' : 'user', content };
}

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return {};
  }
}

function convertToolChoice(choice: ToolChoice | undefined): Record<string, unknown> | undefined {
  if (choice === undefined || choice === 'auto') return { type: 'auto' };
  if (choice === 'required') return { type: 'any' };
  if (choice === 'none') return undefined;
  return { type: 'tool', name: choice.function.name };
}

/** Anthropic's stop reasons in the convention's finish reasons. */
export function mapAnthropicStopReason(reason: string | null | undefined): FinishReason | null {
  switch (reason) {
    case 'end_turn':
    case 'stop_sequence':
    case 'pause_turn':
      return 'stop';
    case 'max_tokens':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default:
      return reason ? 'stop' : null;
  }
}

/** Input tokens as billed: plain input plus cache writes and reads. */
export const anthropicPromptTokens = (usage: AnthropicUsage): number =>
  (usage.input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);

/** Anthropic's usage as canonical usage: the prompt is its input plus cache reads and writes, each kind told apart. */
export const anthropicUsage = (usage: AnthropicUsage): Usage => usageOfKinds(kindsOfAnthropic(usage));

/** A whole Messages API answer as a chat completion. */
export function convertAnthropicResponse(response: AnthropicResponse): ChatCompletion {
  let text = '';
  const toolCalls: ToolCall[] = [];
  let structured = false;
  for (const block of response.content) {
    if (block.type === 'text' && 'text' in block) text += block.text;
    if (block.type === 'tool_use' && 'id' in block) {
      if (block.name === STRUCTURED_TOOL) {
        // The structured answer is the content; text the model wrote around it is left out.
        structured = true;
        text = JSON.stringify(block.input ?? {});
        continue;
      }
      toolCalls.push({
        id: block.id,
        type: 'function',
        function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) },
      });
    }
  }
  if (structured && toolCalls.length > 0) text = '';
  const finish = mapAnthropicStopReason(response.stop_reason);
  return {
    id: response.id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: response.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: toolCalls.length > 0 && text === '' ? null : text,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        finish_reason: finish === 'tool_calls' && toolCalls.length === 0 ? 'stop' : finish,
        ...(typeof response.stop_sequence === 'string' ? { stop_reason: response.stop_sequence } : {}),
      },
    ],
    usage: anthropicUsage(response.usage),
  };
}
