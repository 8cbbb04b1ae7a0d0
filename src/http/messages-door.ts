import { randomBytes } from 'node:crypto';
import { kindsOfUsage, NO_TOKENS } from '../billing/token-kinds.ts';
import type { Admitted } from '../gateway/chat-gateway.ts';
import type { ChatCompletion, FinishReason, Usage } from '../core/chat-types.ts';
import type { ToolEvent } from '../core/stream-event.ts';
import type { StreamSink, TextSink } from '../gateway/stream-sink.ts';
import { isObject } from '../core/json.ts';
import { GatewayError, invalid } from '../core/gateway-error.ts';
import { answerHeaders } from './answer-headers.ts';
import { createDoorSink } from './door-sink.ts';
import { bearerToken } from './auth-hook.ts';
import { type FrontDoor, renameFields } from './front-door.ts';

/**
 * The Anthropic Messages API front door (POST /v1/messages, POST /v1/messages/count_tokens): a Messages request
 * becomes a chat-completions body (the canonical request), and the canonical answer and stream events go back as
 * a Message and its named SSE events. Errors take Anthropic's shape on these routes.
 */
type Json = Record<string, unknown>;

/** `x-api-key` as Anthropic's SDK sends it, or a Bearer token. */
const token = (req: import('node:http').IncomingMessage): string | undefined => {
  const header = req.headers['x-api-key'];
  return typeof header === 'string' && header !== '' ? header : bearerToken(req.headers.authorization);
};

/** Anthropic's own `request-id` header (its SDK's `_request_id`) beside Tollgate's `x-request-id`. */
const idHeaders = (requestId: string): Record<string, string> => ({
  'x-request-id': requestId,
  'request-id': requestId,
});

/** Anthropic's error types by HTTP status (its "errors" page); other 4xx are invalid_request_error. */
function errorType(status: number): string {
  switch (status) {
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    default:
      return status < 500 ? 'invalid_request_error' : 'api_error';
  }
}

const errorBody = (error: GatewayError, requestId: string): Json => ({
  type: 'error',
  error: {
    type: errorType(error.status),
    message: renameFields(error, [['stop', 'stop_sequences']]).message,
  },
  request_id: requestId,
});

export const messagesDoor: FrontDoor = {
  token,
  idHeaders,
  exchange(body) {
    const chatBody = toChatBody(body, true);
    return {
      chatBody,
      streamSink: (text, admitted) => messagesSink(text, admitted),
      answer: (completion, admitted) => messageObject(completion, admitted),
    };
  },
  errorBody,
};

export const countTokensDoor: FrontDoor = {
  token,
  idHeaders,
  exchange: (body) => ({
    chatBody: toChatBody(body, false),
    countOnly: (inputTokens) => ({ input_tokens: inputTokens }),
    streamSink: () => {
      throw new Error('count_tokens does not stream');
    },
    answer: () => {
      throw new Error('count_tokens does not call the model');
    },
  }),
  errorBody,
};

/** A Messages request as the chat-completions body the gateway validates. `max_tokens` is required, as Anthropic's. */
function toChatBody(body: unknown, needsMaxTokens: boolean): Json {
  if (!isObject(body)) throw invalid('the request body must be a JSON object');
  const messages: Json[] = [];
  const system = body['system'];
  if (system !== undefined && system !== null)
    messages.push({ role: 'system', content: textBlocks(system, 'system') });
  const input = body['messages'];
  if (!Array.isArray(input) || input.length === 0)
    throw invalid('messages: Field required (a non-empty array of messages)', 'messages');
  input.forEach((message: unknown, index) => addMessage(messages, message, index));
  const chat: Json = { model: body['model'], messages };
  const maxTokens = body['max_tokens'];
  if (needsMaxTokens && (maxTokens === undefined || maxTokens === null))
    throw invalid('max_tokens: Field required', 'max_tokens');
  if (needsMaxTokens) chat['max_tokens'] = maxTokens;
  if (body['stream'] !== undefined) chat['stream'] = body['stream'];
  for (const field of ['temperature', 'top_p'])
    if (body[field] !== undefined && body[field] !== null) chat[field] = body[field];
  const stop = body['stop_sequences'];
  if (stop !== undefined && stop !== null) {
    if (!Array.isArray(stop)) throw invalid('stop_sequences must be an array of strings', 'stop_sequences');
    if (stop.length > 0) chat['stop'] = stop;
  }
  const tools = body['tools'];
  if (tools !== undefined && tools !== null) {
    if (!Array.isArray(tools)) throw invalid('tools must be an array', 'tools');
    if (tools.length > 0) chat['tools'] = tools.map(toChatTool);
  }
  const format = outputFormat(body['output_config']);
  if (format !== undefined) chat['response_format'] = format;
  const choice = body['tool_choice'];
  if (choice !== undefined && choice !== null) {
    if (!isObject(choice)) throw invalid('tool_choice must be an object', 'tool_choice');
    chat['tool_choice'] = toChatToolChoice(choice);
    if (choice['disable_parallel_tool_use'] === true && chat['tools'] !== undefined)
      chat['parallel_tool_calls'] = false;
  }
  return chat;
}

/**
 * `output_config.format` (Anthropic's structured output: `{type: "json_schema", schema}`) as the chat
 * `response_format`, which every upstream adapter honours or refuses with a 400 naming the model.
 */
function outputFormat(config: unknown): Json | undefined {
  if (config === undefined || config === null) return undefined;
  if (!isObject(config)) throw invalid('output_config: must be an object', 'output_config');
  const format = config['format'];
  if (format === undefined || format === null) return undefined;
  if (!isObject(format) || format['type'] !== 'json_schema' || !isObject(format['schema']))
    throw invalid(
      'output_config.format: must be {"type": "json_schema", "schema": {…}}',
      'output_config.format',
    );
  return { type: 'json_schema', json_schema: { name: 'output', schema: format['schema'] } };
}

/** A tool call's id as Anthropic's clients expect it (`toolu_…`); ids sent back keep the prefix, consistently. */
const toolUseId = (id: string): string => (id.startsWith('toolu_') ? id : `toolu_${id}`);

/** One Messages turn into chat messages: tool results become tool messages (ahead of the turn's text). */
function addMessage(messages: Json[], message: unknown, index: number): void {
  const at = `messages.${index}`;
  if (!isObject(message)) throw invalid(`${at}: must be an object`, at);
  const role = message['role'];
  if (role !== 'user' && role !== 'assistant')
    throw invalid(`${at}.role: must be user or assistant`, `${at}.role`);
  const content = message['content'];
  if (typeof content === 'string') return void messages.push({ role, content });
  if (!Array.isArray(content))
    throw invalid(`${at}.content: must be a string or an array of blocks`, `${at}.content`);
  const parts: Json[] = [];
  const calls: Json[] = [];
  content.forEach((block: unknown, blockIndex) => {
    const where = `${at}.content.${blockIndex}`;
    if (!isObject(block)) throw invalid(`${where}: must be an object`, where);
    switch (block['type']) {
      case 'text':
        if (typeof block['text'] !== 'string') throw invalid(`${where}.text: must be a string`, where);
        parts.push(withMark({ type: 'text', text: block['text'] }, block));
        return;
      case 'tool_use':
        if (role !== 'assistant') throw invalid(`${where}: tool_use blocks belong to assistant turns`, where);
        if (typeof block['id'] !== 'string' || typeof block['name'] !== 'string')
          throw invalid(`${where}: a tool_use block needs id and name`, where);
        calls.push({
          id: block['id'],
          type: 'function',
          function: { name: block['name'], arguments: inputArguments(block['input'], where) },
        });
        return;
      case 'tool_result': {
        if (role !== 'user') throw invalid(`${where}: tool_result blocks belong to user turns`, where);
        if (typeof block['tool_use_id'] !== 'string')
          throw invalid(`${where}.tool_use_id: must be a string`, `${where}.tool_use_id`);
        const result = block['content'] === undefined ? '' : textBlocks(block['content'], `${where}.content`);
        messages.push({
          role: 'tool',
          tool_call_id: block['tool_use_id'],
          content: markedResult(result, block),
        });
        return;
      }
      case 'thinking':
      case 'redacted_thinking':
        // An earlier turn's reasoning: not part of the prompt any upstream here takes.
        return;
      default:
        throw invalid(
          `${where}.type: ${JSON.stringify(block['type'] ?? null).slice(0, 60)} blocks are not supported; use text, tool_use and tool_result`,
          `${where}.type`,
        );
    }
  });
  const hasText = parts.length > 0;
  const text = textOf(parts);
  if (role === 'assistant') {
    const turn: Json = { role, content: hasText ? text : null };
    if (calls.length > 0) turn['tool_calls'] = calls;
    messages.push(turn);
  } else if (hasText || messages.at(-1)?.['role'] !== 'tool') {
    messages.push({ role, content: text });
  }
}

/** A mark on a tool_result block goes on its last text part, where the chat body can carry it. */
function markedResult(result: string | Json[], block: Json): string | Json[] {
  if (!isMarked(block)) return result;
  const parts = typeof result === 'string' ? [{ type: 'text', text: result }] : result;
  return [...parts.slice(0, -1), withMark(parts.at(-1) ?? { type: 'text', text: '' }, block)];
}

const isMarked = (block: Json): boolean =>
  block['cache_control'] !== undefined && block['cache_control'] !== null;

/** The part with the block's `cache_control`, when it has one (checked where the chat body is validated). */
const withMark = (part: Json, block: Json): Json =>
  isMarked(block) ? { ...part, cache_control: block['cache_control'] } : part;

/**
 * Text blocks as chat content: their text joined, or the parts themselves when one carries a cache mark, so
 * the mark and the blocks' edges reach an upstream that caches by breakpoint.
 */
const textOf = (parts: Json[]): string | Json[] =>
  parts.some((part) => part['cache_control'] !== undefined)
    ? parts
    : parts.map((part) => part['text']).join('');

/** A tool_use block's input as the JSON text of a call's arguments; input nested past any real schema is a 400. */
function inputArguments(input: unknown, at: string): string {
  try {
    return JSON.stringify(input ?? {});
  } catch (error) {
    // JSON.stringify recurses: input nested thousands of levels deep overflows the stack.
    throw new GatewayError('invalid_request', `${at}.input: nests too deeply`, {
      cause: error,
      param: `${at}.input`,
    });
  }
}

/** A string, or text blocks: joined, or as text parts when one carries a cache mark. */
function textBlocks(value: unknown, at: string): string | Json[] {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) throw invalid(`${at}: must be a string or an array of text blocks`, at);
  const parts = value.map((block: unknown, index): Json => {
    if (!isObject(block) || block['type'] !== 'text' || typeof block['text'] !== 'string')
      throw invalid(`${at}.${index}: only text blocks are supported here`, `${at}.${index}`);
    return withMark({ type: 'text', text: block['text'] }, block);
  });
  return textOf(parts);
}

/** A client tool ({name, description, input_schema}); Anthropic's server tools (web search, bash …) are refused. */
function toChatTool(tool: unknown, index: number): Json {
  const at = `tools.${index}`;
  if (!isObject(tool)) throw invalid(`${at}: must be an object`, at);
  if (tool['type'] !== undefined && tool['type'] !== null && tool['type'] !== 'custom')
    throw invalid(
      `${at}: the server tool ${JSON.stringify(tool['type'] ?? null).slice(0, 60)} is not supported; Tollgate serves client tools (name, description, input_schema) only`,
      `${at}.type`,
    );
  const fn: Json = { name: tool['name'] };
  if (typeof tool['description'] === 'string') fn['description'] = tool['description'];
  if (tool['input_schema'] !== undefined) fn['parameters'] = tool['input_schema'];
  return withMark({ type: 'function', function: fn }, tool);
}

function toChatToolChoice(choice: Json): unknown {
  switch (choice['type']) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      if (typeof choice['name'] === 'string') return { type: 'function', function: { name: choice['name'] } };
  }
  throw invalid('tool_choice.type: must be auto, any, none or tool (with a name)', 'tool_choice');
}

const messageId = (): string => `msg_${randomBytes(12).toString('hex')}`;

/** The chat finish reason as Anthropic's stop_reason: `stop_sequence` when a stop sequence ended it. */
function stopReason(finish: FinishReason | null, stopSequence?: unknown): string {
  if (finish === 'stop' && typeof stopSequence === 'string') return 'stop_sequence';
  switch (finish) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    default:
      return 'end_turn';
  }
}

function parseInput(args: string): unknown {
  try {
    const input: unknown = JSON.parse(args === '' ? '{}' : args);
    return isObject(input) ? input : {};
  } catch {
    return {};
  }
}

const stopSequenceOf = (finish: FinishReason | null, stopSequence: unknown): string | null =>
  finish === 'stop' && typeof stopSequence === 'string' ? stopSequence : null;

/**
 * Usage on Anthropic's convention: `input_tokens` counts only the prompt tokens neither read from nor written to
 * the cache, which are reported beside it (the writes split by lifetime as `cache_creation`).
 */
function usageOf(usage: Usage | undefined): Json {
  const kinds = usage === undefined ? NO_TOKENS : kindsOfUsage(usage);
  return {
    input_tokens: kinds.input,
    cache_creation_input_tokens: kinds.cacheWrite5m + kinds.cacheWrite1h,
    cache_read_input_tokens: kinds.cachedInput,
    cache_creation: {
      ephemeral_5m_input_tokens: kinds.cacheWrite5m,
      ephemeral_1h_input_tokens: kinds.cacheWrite1h,
    },
    output_tokens: kinds.output,
  };
}

function messageObject(completion: ChatCompletion, admitted: Admitted): Json {
  const choice = completion.choices[0];
  const content: Json[] = [];
  const text = choice?.message.content;
  if (typeof text === 'string' && text !== '') content.push({ type: 'text', text });
  for (const call of choice?.message.tool_calls ?? [])
    content.push({
      type: 'tool_use',
      id: toolUseId(call.id),
      name: call.function.name,
      input: parseInput(call.function.arguments),
    });
  return {
    id: messageId(),
    type: 'message',
    role: 'assistant',
    model: admitted.request.model,
    content,
    stop_reason: stopReason(choice?.finish_reason ?? null, choice?.stop_reason),
    stop_sequence: stopSequenceOf(choice?.finish_reason ?? null, choice?.stop_reason),
    usage: usageOf(completion.usage),
  };
}

/**
 * The Messages stream: message_start (usage so far: the prompt), ping, then per content block content_block_start,
 * content_block_delta (text_delta or input_json_delta)…, content_block_stop; then message_delta with the
 * stop_reason and usage, and message_stop. An upstream failure mid-way is one `error` event.
 */
function messagesSink(text: TextSink, admitted: Admitted): StreamSink {
  let index = -1;
  let block: 'text' | 'tool' | undefined;
  const calls = new Map<number, number>();
  let finish: FinishReason | null = null;
  let stopSequence: string | undefined;

  const send = (type: string, event: Json): boolean =>
    text.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...event })}\n\n`);

  const stop = (): void => {
    if (block === undefined) return;
    send('content_block_stop', { index });
    block = undefined;
  };

  /** A text delta: opens a text block first when a tool block (or none) was open. */
  const sendText = (content: string): boolean => {
    if (block !== 'text') {
      stop();
      block = 'text';
      send('content_block_start', { index: ++index, content_block: { type: 'text', text: '' } });
    }
    return send('content_block_delta', { index, delta: { type: 'text_delta', text: content } });
  };

  /** A tool-call delta: its first piece opens a tool_use block, argument fragments go to the open one. */
  const sendTool = (call: ToolEvent): boolean => {
    if (!calls.has(call.index)) {
      stop();
      block = 'tool';
      calls.set(call.index, ++index);
      send('content_block_start', {
        index,
        content_block: {
          type: 'tool_use',
          id: toolUseId(call.id ?? randomBytes(12).toString('hex')),
          name: call.name ?? '',
          input: {},
        },
      });
    }
    if (calls.get(call.index) !== index || block !== 'tool' || call.args === '') return true;
    return send('content_block_delta', {
      index,
      delta: { type: 'input_json_delta', partial_json: call.args },
    });
  };

  return createDoorSink(text, {
    open(facts) {
      text.open(answerHeaders(facts));
      send('message_start', {
        message: {
          id: messageId(),
          type: 'message',
          role: 'assistant',
          model: admitted.request.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: admitted.promptTokens, output_tokens: 0 },
        },
      });
      send('ping', {});
    },
    events(batch) {
      let ready = true;
      for (const event of batch) {
        if (event.type === 'finish') {
          finish = event.reason;
          stopSequence = event.stopSequence;
        } else if (event.type === 'text' && event.text !== '') ready = sendText(event.text) && ready;
        else if (event.type === 'tool') ready = sendTool(event) && ready;
      }
      return ready;
    },
    complete(usage) {
      stop();
      send('message_delta', {
        delta: {
          stop_reason: stopReason(finish, stopSequence),
          stop_sequence: stopSequenceOf(finish, stopSequence),
        },
        usage: usageOf(usage),
      });
      send('message_stop', {});
    },
    fail(error) {
      send('error', { error: { type: errorType(error.status), message: error.message } });
    },
    end: () => text.end(),
  });
}
