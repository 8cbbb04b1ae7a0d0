import { randomBytes } from 'node:crypto';
import { kindsOfUsage } from '../billing/token-kinds.ts';
import type { Admitted } from '../gateway/chat-gateway.ts';
import type { FinishReason, ToolCall, Usage } from '../core/chat-types.ts';
import type { ToolEvent } from '../core/stream-event.ts';
import { DEFAULT_TEMPERATURE, knownParams } from '../core/known-params.ts';
import type { StreamSink, TextSink } from '../gateway/stream-sink.ts';
import { isObject } from '../core/json.ts';
import { GatewayError, invalid } from '../core/gateway-error.ts';
import { answerHeaders } from './answer-headers.ts';
import { createDoorSink } from './door-sink.ts';
import { bearerToken } from './auth-hook.ts';
import { type ExchangeContext, type FrontDoor, renameFields } from './front-door.ts';

/**
 * The OpenAI Responses API front door (POST /v1/responses): a Responses request becomes a chat-completions body
 * (the canonical request), and the canonical answer and stream events go back as a Response object and its typed
 * SSE events. Tollgate stores no content, so every request is treated as `store: false`.
 */
export const RESPONSES_PATH = '/v1/responses';

type Json = Record<string, unknown>;

/** GET /v1/responses/{id} and the like: nothing was stored to retrieve. */
export const responsesNotStored = (): GatewayError =>
  new GatewayError(
    'not_found',
    'Tollgate stores no responses (every request is treated as store: false), so none can be retrieved, listed or deleted by id; send the whole conversation in `input` instead',
  );

export const responsesDoor: FrontDoor = {
  token: (req) => bearerToken(req.headers.authorization),
  idHeaders: (requestId) => ({ 'x-request-id': requestId }),
  exchange(body, context) {
    const chatBody = toChatBody(body, context);
    const echo = body as Json;
    return {
      chatBody,
      streamSink: (text, admitted) => responsesSink(text, echo, admitted),
      answer: (completion, admitted) => {
        const choice = completion.choices[0];
        const output = outputItems(choice?.message.content ?? null, choice?.message.tool_calls, context);
        const logprobs = (choice?.logprobs as { content?: unknown } | null | undefined)?.content;
        const message = output.find((item) => item['type'] === 'message');
        if (message !== undefined && Array.isArray(logprobs))
          (message['content'] as Json[])[0]!['logprobs'] = logprobs;
        return responseObject(
          echo,
          admitted,
          itemId('resp'),
          completion.created,
          statusOf(choice?.finish_reason ?? null),
          output,
          completion.usage,
        );
      },
    };
  },
  errorBody: (error) => renameFields(error, RESPONSES_FIELDS).toBody(),
};

/** Chat-completions fields as the Responses API names them, for validation errors. */
const RESPONSES_FIELDS = [
  ['max_tokens', 'max_output_tokens'],
  ['response_format', 'text.format'],
  ['messages', 'input'],
] as const;

/** A Responses request as the chat-completions body the gateway validates; 400 for what cannot be served. */
function toChatBody(body: unknown, context: ExchangeContext): Json {
  if (!isObject(body)) throw invalid('the request body must be a JSON object');
  if (body['previous_response_id'] !== undefined && body['previous_response_id'] !== null)
    throw invalid(
      'previous_response_id is not supported: Tollgate stores no responses (every request is treated as store: false); send the whole conversation in `input`',
      'previous_response_id',
    );
  if (body['conversation'] !== undefined && body['conversation'] !== null)
    throw invalid(
      'conversation is not supported: Tollgate stores no conversations; send the whole conversation in `input`',
      'conversation',
    );
  if (body['background'] === true)
    throw invalid('background is not supported: Tollgate stores no responses to poll for', 'background');
  const messages: Json[] = [];
  const instructions = body['instructions'];
  if (instructions !== undefined && instructions !== null) {
    if (typeof instructions !== 'string') throw invalid('instructions must be a string', 'instructions');
    messages.push({ role: 'system', content: instructions });
  }
  const input = body['input'];
  if (typeof input === 'string') messages.push({ role: 'user', content: input });
  else if (Array.isArray(input))
    input.forEach((item: unknown, index) => addItem(messages, item, index, context));
  else throw invalid('input is required: a string or an array of input items', 'input');

  const chat: Json = { model: body['model'], messages };
  if (body['stream'] !== undefined) chat['stream'] = body['stream'];
  if (body['max_output_tokens'] !== undefined && body['max_output_tokens'] !== null)
    chat['max_tokens'] = body['max_output_tokens'];
  for (const field of ['temperature', 'top_p', 'parallel_tool_calls', 'user'])
    if (body[field] !== undefined && body[field] !== null) chat[field] = body[field];
  const tools = body['tools'];
  if (tools !== undefined && tools !== null) {
    if (!Array.isArray(tools)) throw invalid('tools must be an array', 'tools');
    if (tools.length > 0) chat['tools'] = tools.map(toChatTool);
  }
  const toolChoice = body['tool_choice'];
  if (toolChoice !== undefined && toolChoice !== null) chat['tool_choice'] = toChatToolChoice(toolChoice);
  const include = body['include'];
  if (Array.isArray(include) && include.includes('message.output_text.logprobs')) {
    chat['logprobs'] = true;
    if (body['top_logprobs'] !== undefined && body['top_logprobs'] !== null)
      chat['top_logprobs'] = body['top_logprobs'];
  }
  // Fields of no Responses meaning here go on as chat fields, so they meet chat's checks: a cost-bearing one
  // (service_tier …) is refused by the deployment's policy, a chat one (stop …) is validated and honoured.
  for (const [field, value] of Object.entries(body))
    if (!RESPONSES_OWN_FIELDS.has(field) && !(field in chat)) chat[field] = value;
  const text = body['text'];
  if (isObject(text) && isObject(text['format'])) {
    const format = text['format'];
    if (format['type'] === 'json_object') chat['response_format'] = { type: 'json_object' };
    else if (format['type'] === 'json_schema') {
      const schema: Json = { name: format['name'], schema: format['schema'] };
      if (format['strict'] !== undefined) schema['strict'] = format['strict'];
      if (format['description'] !== undefined) schema['description'] = format['description'];
      chat['response_format'] = { type: 'json_schema', json_schema: schema };
    } else if (format['type'] !== 'text')
      throw invalid('text.format.type must be text, json_object or json_schema', 'text.format.type');
  }
  return chat;
}

/**
 * The Responses fields this door maps or deliberately leaves out (stored state, caching hints, metadata that
 * changes no answer). Anything else is passed on as a chat field.
 */
const RESPONSES_OWN_FIELDS: ReadonlySet<string> = new Set([
  'model',
  'input',
  'instructions',
  'stream',
  'max_output_tokens',
  'temperature',
  'top_p',
  'parallel_tool_calls',
  'user',
  'tools',
  'tool_choice',
  'text',
  'include',
  'top_logprobs',
  'metadata',
  'store',
  'previous_response_id',
  'conversation',
  'background',
  'reasoning',
  'truncation',
  'prompt_cache_key',
  'safety_identifier',
  'stream_options',
  'max_tool_calls',
]);

/** One input item into the chat messages: a message, a function call (an assistant turn) or its output. */
function addItem(messages: Json[], given: unknown, index: number, context: ExchangeContext): void {
  const at = `input[${index}]`;
  if (!isObject(given)) throw invalid(`${at} must be an object`, at);
  const item = given['type'] === 'item_reference' ? referenced(given, at, context) : given;
  const type = item['type'] ?? 'message';
  if (type === 'message') {
    const role = item['role'];
    if (role !== 'user' && role !== 'assistant' && role !== 'system' && role !== 'developer')
      throw invalid(`${at}.role must be user, assistant, system or developer`, `${at}.role`);
    messages.push({ role, content: textOf(item['content'], `${at}.content`) });
  } else if (type === 'function_call') {
    if (typeof item['call_id'] !== 'string' || typeof item['name'] !== 'string')
      throw invalid(`${at}: a function_call item needs call_id and name`, at);
    const call = {
      id: item['call_id'],
      type: 'function',
      function: {
        name: item['name'],
        arguments: typeof item['arguments'] === 'string' ? item['arguments'] : '',
      },
    };
    // Calls that follow an assistant turn (its text, or other calls) belong to that turn.
    const last = messages.at(-1);
    if (last?.['role'] === 'assistant') ((last['tool_calls'] ??= []) as unknown[]).push(call);
    else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
  } else if (type === 'function_call_output') {
    if (typeof item['call_id'] !== 'string')
      throw invalid(`${at}: a function_call_output item needs call_id`, `${at}.call_id`);
    messages.push({
      role: 'tool',
      tool_call_id: item['call_id'],
      content: textOf(item['output'], `${at}.output`),
    });
  } else if (type === 'reasoning') {
    // A reasoning model's summary from an earlier turn: not part of the prompt any upstream here takes.
  } else {
    throw invalid(
      `${at}.type ${JSON.stringify(type).slice(0, 60)} is not supported: use message, function_call or function_call_output items`,
      `${at}.type`,
    );
  }
}

/** A string, or text parts (input_text, output_text) joined; other parts (images, files) are refused. */
function textOf(content: unknown, at: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalid(`${at} must be a string or an array of content parts`, at);
  let text = '';
  content.forEach((part: unknown, index) => {
    if (
      !isObject(part) ||
      (part['type'] !== 'input_text' && part['type'] !== 'output_text' && part['type'] !== 'text') ||
      typeof part['text'] !== 'string'
    )
      throw invalid(
        `${at}[${index}]: only input_text and output_text parts are supported`,
        `${at}[${index}]`,
      );
    text += part['text'];
  });
  return text;
}

/** A Responses function tool (flat) into a chat tool; hosted tools are refused. */
function toChatTool(tool: unknown, index: number): Json {
  const at = `tools[${index}]`;
  if (!isObject(tool)) throw invalid(`${at} must be an object`, at);
  if (tool['type'] !== 'function')
    throw invalid(
      `${at}: the hosted tool ${JSON.stringify(tool['type'] ?? null).slice(0, 60)} is not supported; Tollgate serves function tools only`,
      `${at}.type`,
    );
  const fn: Json = { name: tool['name'] };
  if (tool['description'] !== undefined && tool['description'] !== null)
    fn['description'] = tool['description'];
  if (tool['parameters'] !== undefined && tool['parameters'] !== null) fn['parameters'] = tool['parameters'];
  if (typeof tool['strict'] === 'boolean') fn['strict'] = tool['strict'];
  return { type: 'function', function: fn };
}

function toChatToolChoice(choice: unknown): unknown {
  if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
  if (isObject(choice) && choice['type'] === 'function' && typeof choice['name'] === 'string')
    return { type: 'function', function: { name: choice['name'] } };
  throw invalid(
    'tool_choice must be auto, none, required or {"type":"function","name":…}; hosted tools are not supported',
    'tool_choice',
  );
}

/** The item an `item_reference` names, opened from its sealed id, as the input item it stands for. */
function referenced(reference: Json, at: string, context: ExchangeContext): Json {
  const item = context.items.open(reference['id'], context.accountId, at);
  if (item.type === 'message') return { type: 'message', role: 'assistant', content: item.text };
  return item;
}

const itemId = (prefix: string): string => `${prefix}_${randomBytes(12).toString('hex')}`;

type Status = 'completed' | 'incomplete';

const statusOf = (finish: FinishReason | null): Status =>
  finish === 'length' || finish === 'content_filter' ? 'incomplete' : 'completed';

/** A whole answer's items, each id carrying its item (sealed) so that a later `item_reference` resolves. */
function outputItems(
  content: string | null,
  calls: ToolCall[] | undefined,
  { items, accountId }: ExchangeContext,
): Json[] {
  const output: Json[] = [];
  if (content !== null && content !== '')
    output.push(
      messageItem(items.idFor('msg', accountId, { type: 'message', text: content }), content, 'completed'),
    );
  for (const call of calls ?? []) {
    const { name, arguments: args } = call.function;
    const sealed = { type: 'function_call' as const, call_id: call.id, name, arguments: args };
    output.push(callItem(items.idFor('fc', accountId, sealed), call.id, name, args, 'completed'));
  }
  return output;
}

const messageItem = (id: string, text: string | null, status: string): Json => ({
  id,
  type: 'message',
  status,
  role: 'assistant',
  content: text === null ? [] : [outputText(text)],
});

const outputText = (text: string): Json => ({ type: 'output_text', text, annotations: [], logprobs: [] });

const callItem = (id: string, callId: string, name: string, args: string, status: string): Json => ({
  id,
  type: 'function_call',
  status,
  call_id: callId,
  name,
  arguments: args,
});

/** The Response object, echoing the request's settings as OpenAI's does. */
function responseObject(
  echo: Json,
  admitted: Admitted,
  id: string,
  createdAt: number,
  status: Status | 'in_progress',
  output: Json[],
  usage: Usage | undefined,
): Json {
  const text = isObject(echo['text']) ? echo['text'] : { format: { type: 'text' } };
  const known = knownParams(admitted.request.body);
  return {
    id,
    object: 'response',
    created_at: createdAt,
    status,
    error: null,
    incomplete_details:
      status === 'incomplete'
        ? { reason: known.maxTokens !== undefined ? 'max_output_tokens' : 'content_filter' }
        : null,
    instructions: echo['instructions'] ?? null,
    max_output_tokens: echo['max_output_tokens'] ?? null,
    model: admitted.request.model,
    output,
    parallel_tool_calls: echo['parallel_tool_calls'] ?? true,
    previous_response_id: null,
    reasoning: {
      effort: (isObject(echo['reasoning']) ? echo['reasoning']['effort'] : null) ?? null,
      summary: (isObject(echo['reasoning']) ? echo['reasoning']['summary'] : null) ?? null,
    },
    store: false,
    temperature: known.temperature ?? DEFAULT_TEMPERATURE,
    text,
    tool_choice: echo['tool_choice'] ?? 'auto',
    tools: Array.isArray(echo['tools']) ? echo['tools'] : [],
    top_p: known.topP ?? null,
    truncation: 'disabled',
    usage: usage === undefined ? null : responsesUsage(usage),
    user: echo['user'] ?? null,
    metadata: isObject(echo['metadata']) ? echo['metadata'] : {},
  };
}

/**
 * The Responses stream: response.created and response.in_progress; for a text answer output_item.added,
 * content_part.added, output_text.delta…, output_text.done, content_part.done, output_item.done; for each function
 * call output_item.added, function_call_arguments.delta…, function_call_arguments.done, output_item.done; then
 * response.completed (or response.incomplete) with the usage. Every event carries its sequence_number.
 */
function responsesSink(text: TextSink, echo: Json, admitted: Admitted): StreamSink {
  const id = itemId('resp');
  const createdAt = Math.floor(Date.now() / 1000);
  let sequence = 0;
  const output: Json[] = [];
  /** The item being streamed: its output index, and for a message its text, for a call its arguments. */
  let open: { kind: 'message' | 'call'; index: number; item: Json; text: string } | undefined;
  const calls = new Map<number, Json>();
  let finish: FinishReason | null = null;

  const send = (type: string, event: Json): boolean =>
    text.write(
      `event: ${type}\ndata: ${JSON.stringify({ type, ...event, sequence_number: sequence++ })}\n\n`,
    );

  const close = (): void => {
    if (open === undefined) return;
    const { index, item } = open;
    if (open.kind === 'message') {
      const part = outputText(open.text);
      send('response.output_text.done', {
        item_id: item['id'],
        output_index: index,
        content_index: 0,
        text: open.text,
        logprobs: [],
      });
      send('response.content_part.done', {
        item_id: item['id'],
        output_index: index,
        content_index: 0,
        part,
      });
      item['content'] = [part];
    } else {
      item['arguments'] = open.text;
      send('response.function_call_arguments.done', {
        item_id: item['id'],
        output_index: index,
        name: item['name'],
        arguments: open.text,
      });
    }
    item['status'] = 'completed';
    send('response.output_item.done', { output_index: index, item });
    open = undefined;
  };

  /** A content delta: opens the message item first when a call (or nothing) was open. */
  const sendText = (content: string): boolean => {
    if (open?.kind !== 'message') {
      close();
      const item = messageItem(itemId('msg'), null, 'in_progress');
      open = { kind: 'message', index: output.length, item, text: '' };
      output.push(item);
      send('response.output_item.added', { output_index: open.index, item });
      send('response.content_part.added', {
        item_id: item['id'],
        output_index: open.index,
        content_index: 0,
        part: outputText(''),
      });
    }
    open.text += content;
    return send('response.output_text.delta', {
      item_id: open.item['id'],
      output_index: open.index,
      content_index: 0,
      delta: content,
      logprobs: [],
    });
  };

  /** A tool-call delta: its first piece opens a function_call item, argument fragments go to the open one. */
  const sendTool = (call: ToolEvent): boolean => {
    let item = calls.get(call.index);
    if (item === undefined) {
      close();
      item = callItem(itemId('fc'), call.id ?? itemId('call'), call.name ?? '', '', 'in_progress');
      calls.set(call.index, item);
      open = { kind: 'call', index: output.length, item, text: '' };
      output.push(item);
      send('response.output_item.added', { output_index: open.index, item: { ...item } });
    }
    if (open?.item !== item || call.args === '') return true;
    open.text += call.args;
    return send('response.function_call_arguments.delta', {
      item_id: item['id'],
      output_index: open.index,
      delta: call.args,
    });
  };

  return createDoorSink(text, {
    open(facts) {
      text.open(answerHeaders(facts));
      const response = responseObject(echo, admitted, id, createdAt, 'in_progress', [], undefined);
      send('response.created', { response });
      send('response.in_progress', { response });
    },
    events(batch) {
      let ready = true;
      for (const event of batch) {
        if (event.type === 'finish') finish = event.reason;
        else if (event.type === 'text' && event.text !== '') ready = sendText(event.text) && ready;
        else if (event.type === 'tool') ready = sendTool(event) && ready;
      }
      return ready;
    },
    complete(usage) {
      close();
      const status = statusOf(finish);
      const response = responseObject(echo, admitted, id, createdAt, status, output, usage);
      send(status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
    },
    fail(error) {
      send('error', { code: error.code, message: error.message, param: error.param });
    },
    end: () => text.end(),
  });
}

/**
 * Usage on the Responses API's convention: `input_tokens` counts the whole prompt, cached tokens included, and
 * the details tell the cache reads (and writes, where an upstream made some) and the reasoning within the output.
 */
function responsesUsage(usage: Usage): Json {
  const kinds = kindsOfUsage(usage);
  const writes = kinds.cacheWrite5m + kinds.cacheWrite1h;
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: {
      cached_tokens: kinds.cachedInput,
      ...(writes > 0 ? { cache_write_tokens: writes } : {}),
    },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: kinds.reasoning },
    total_tokens: usage.total_tokens,
  };
}
