import { invalidChoices } from '../core/choices.ts';
import type { ModelConfig } from '../core/config.ts';
import { isObject } from '../core/json.ts';
import { GatewayError, invalid as invalidParam } from '../core/gateway-error.ts';
import type {
  CacheControl,
  ChatMessage,
  ChatRequest,
  Role,
  TextPart,
  ToolCall,
  ToolDefinition,
} from '../core/chat-types.ts';

const ROLES: ReadonlySet<string> = new Set<Role>(['system', 'developer', 'user', 'assistant', 'tool']);
const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** At most this many tools per request, as OpenAI's API documents ("a max of 128 functions"). */
export const MAX_TOOLS = 128;
/**
 * How deep JSON may nest anywhere in a request. The body is serialized again on its way upstream, and
 * JSON.stringify recurses: a few thousand levels overflow the stack. Real tool schemas nest a dozen levels.
 */
export const MAX_JSON_DEPTH = 64;

/** The request's own fields: a message that starts with one of them (`messages[2].role must …`) names it. */
const FIELDS =
  /^((?:model|messages|temperature|top_p|presence_penalty|frequency_penalty|max_tokens|max_completion_tokens|stream|stream_options|stop|tools|tool_choice|n)\b[\w.[\]]*)/;

/** A 400 whose `param` is the field its message starts with (null when it starts with none). */
const invalid = (message: string): GatewayError => invalidParam(message, FIELDS.exec(message)?.[1]);

function numberIn(
  body: Record<string, unknown>,
  field: string,
  min: number,
  max: number,
): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(`${field} must be a number`);
  if (value < min || value > max) throw invalid(`${field} must be between ${min} and ${max}`);
  return value;
}

/**
 * Validates an untrusted chat-completion body against the spec's rules and the model's limits.
 * Throws 400 invalid_request naming the field, or 404 model_not_found.
 */
export function parseChatRequest(
  body: unknown,
  models: ReadonlyMap<string, ModelConfig>,
  maxMessages: number,
): { request: ChatRequest; model: ModelConfig } {
  if (!isObject(body)) throw invalid('the request body must be a JSON object');
  if (typeof body['model'] !== 'string' || body['model'] === '')
    throw invalid('model is required and must be a string');
  const model = models.get(body['model']);
  if (!model)
    throw new GatewayError(
      'model_not_found',
      `the model ${JSON.stringify(body['model'].slice(0, 100))} does not exist; GET /v1/models lists them`,
      { param: 'model' },
    );

  const rawMessages = body['messages'];
  if (!Array.isArray(rawMessages) || rawMessages.length === 0)
    throw invalid('messages must be a non-empty array');
  if (rawMessages.length > maxMessages) throw invalid(`messages may hold at most ${maxMessages} items`);
  const rawTools = body['tools'];
  if (Array.isArray(rawTools) && rawTools.length > MAX_TOOLS)
    throw invalid(`tools may hold at most ${MAX_TOOLS} items`);
  checkDepth(body);
  const messages = rawMessages.map((raw: unknown, index) => parseMessage(raw, index));

  numberIn(body, 'temperature', 0, 2);
  numberIn(body, 'top_p', 0, 1);
  numberIn(body, 'presence_penalty', -2, 2);
  numberIn(body, 'frequency_penalty', -2, 2);

  checkMaxTokens(body, model);
  const stream = body['stream'];
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean')
    throw invalid('stream must be a boolean');
  const streamOptions = body['stream_options'];
  let includeUsage = false;
  if (streamOptions !== undefined && streamOptions !== null) {
    if (!isObject(streamOptions)) throw invalid('stream_options must be an object');
    const flag = streamOptions['include_usage'];
    if (flag !== undefined && typeof flag !== 'boolean')
      throw invalid('stream_options.include_usage must be a boolean');
    includeUsage = flag === true;
  }
  // OpenRouter's way to ask for the usage chunk: `usage: {include: true}`. Read here and taken out of the body,
  // which goes on to upstreams as sent (OpenAI's refuses fields it does not know).
  const usage = body['usage'];
  if (usage !== undefined) {
    if (
      usage !== null &&
      (!isObject(usage) || (usage['include'] !== undefined && typeof usage['include'] !== 'boolean'))
    )
      throw invalid('usage must be {"include": true|false}');
    if (isObject(usage) && usage['include'] === true) includeUsage = true;
    delete body['usage'];
  }
  checkStop(body['stop']);
  const tools = parseTools(body['tools']);
  checkToolChoice(body['tool_choice'], tools);
  checkResponseFormat(body['response_format']);
  const badChoices = invalidChoices(body['n']);
  if (badChoices) throw badChoices;

  return {
    model,
    request: {
      model: model.id,
      messages,
      stream: stream === true,
      includeUsage,
      // Validated above: the fields ChatBody types hold the types it gives them.
      body,
    },
  };
}

/** Refuses JSON nested deeper than MAX_JSON_DEPTH; walks objects and arrays only, never into strings. */
function checkDepth(body: Record<string, unknown>): void {
  const values: unknown[] = [body];
  const depths: number[] = [1];
  for (let value = values.pop(); value !== undefined; value = values.pop()) {
    const depth = depths.pop()! + 1;
    const children: unknown[] = Array.isArray(value) ? value : Object.values(value as object);
    for (const child of children) {
      if (typeof child !== 'object' || child === null) continue;
      if (depth > MAX_JSON_DEPTH)
        throw invalid(`the request's JSON nests deeper than ${MAX_JSON_DEPTH} levels, the limit`);
      values.push(child);
      depths.push(depth);
    }
  }
}

function checkMaxTokens(body: Record<string, unknown>, model: ModelConfig): void {
  for (const field of ['max_tokens', 'max_completion_tokens']) {
    const value = body[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1)
      throw invalid(`${field} must be a positive integer`);
    if (value > model.maxOutputTokens)
      throw invalid(`${field} must be at most ${model.maxOutputTokens} for ${model.id}`);
  }
}

/** A `cache_control` mark: `{type: "ephemeral"}`, with an optional `ttl` of "5m" or "1h" (Anthropic's). */
function parseCacheControl(raw: unknown, at: string): CacheControl | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (
    !isObject(raw) ||
    raw['type'] !== 'ephemeral' ||
    (raw['ttl'] !== undefined && raw['ttl'] !== '5m' && raw['ttl'] !== '1h')
  )
    throw invalid(`${at}.cache_control must be {"type":"ephemeral"} with an optional "ttl" of "5m" or "1h"`);
  return raw['ttl'] === undefined ? { type: 'ephemeral' } : { type: 'ephemeral', ttl: raw['ttl'] };
}

/** A message's text, and its parts when one of them carries a cache mark. */
function parseContent(
  raw: unknown,
  at: string,
  nullable: boolean,
): { content: string | null; cacheParts?: TextPart[] } {
  if (typeof raw === 'string') return { content: raw };
  if ((raw === null || raw === undefined) && nullable) return { content: null };
  if (!Array.isArray(raw)) throw invalid(`${at}.content must be a string or an array of text parts`);
  const parts = raw.map((part: unknown, index): TextPart => {
    if (!isObject(part) || part['type'] !== 'text' || typeof part['text'] !== 'string') {
      throw invalid(
        `${at}.content[${index}] must be a text part ({"type":"text","text":"…"}); other part types are not supported`,
      );
    }
    const mark = parseCacheControl(part['cache_control'], `${at}.content[${index}]`);
    return mark ? { text: part['text'], cache_control: mark } : { text: part['text'] };
  });
  const content = parts.map((part) => part.text).join('');
  return parts.some((part) => part.cache_control) ? { content, cacheParts: parts } : { content };
}

function parseMessage(raw: unknown, index: number): ChatMessage {
  const at = `messages[${index}]`;
  if (!isObject(raw)) throw invalid(`${at} must be an object`);
  const role = raw['role'];
  if (typeof role !== 'string' || !ROLES.has(role))
    throw invalid(`${at}.role must be one of ${[...ROLES].join(', ')}`);
  const message: ChatMessage = { role: role as Role, content: null };
  const hasToolCalls = role === 'assistant' && raw['tool_calls'] !== undefined && raw['tool_calls'] !== null;
  const { content, cacheParts } = parseContent(raw['content'], at, hasToolCalls);
  message.content = content;
  if (cacheParts) message.cacheParts = cacheParts;
  if (raw['name'] !== undefined) {
    if (typeof raw['name'] !== 'string') throw invalid(`${at}.name must be a string`);
    message.name = raw['name'];
  }
  if (hasToolCalls) message.tool_calls = parseToolCalls(raw['tool_calls'], at);
  if (role === 'tool') {
    if (typeof raw['tool_call_id'] !== 'string' || raw['tool_call_id'] === '')
      throw invalid(`${at}.tool_call_id is required for a tool message`);
    message.tool_call_id = raw['tool_call_id'];
  }
  return message;
}

function parseToolCalls(raw: unknown, at: string): ToolCall[] {
  if (!Array.isArray(raw)) throw invalid(`${at}.tool_calls must be an array`);
  return raw.map((call: unknown, index) => {
    const where = `${at}.tool_calls[${index}]`;
    const fn = isObject(call) ? call['function'] : undefined;
    if (
      !isObject(call) ||
      typeof call['id'] !== 'string' ||
      call['type'] !== 'function' ||
      !isObject(fn) ||
      typeof fn['name'] !== 'string' ||
      typeof fn['arguments'] !== 'string'
    ) {
      throw invalid(`${where} must be {"id", "type":"function", "function":{"name", "arguments"}}`);
    }
    return { id: call['id'], type: 'function', function: { name: fn['name'], arguments: fn['arguments'] } };
  });
}

function checkStop(raw: unknown): void {
  if (raw === undefined || raw === null || typeof raw === 'string') return;
  if (Array.isArray(raw) && raw.length <= 4 && raw.every((item) => typeof item === 'string')) return;
  throw invalid('stop must be a string or an array of at most 4 strings');
}

function parseTools(raw: unknown): ToolDefinition[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!Array.isArray(raw)) throw invalid('tools must be an array');
  return raw.map((tool: unknown, index) => {
    const at = `tools[${index}]`;
    if (!isObject(tool) || tool['type'] !== 'function') throw invalid(`${at}.type must be "function"`);
    const fn = tool['function'];
    if (!isObject(fn)) throw invalid(`${at}.function must be an object`);
    if (typeof fn['name'] !== 'string' || !FUNCTION_NAME.test(fn['name']))
      throw invalid(`${at}.function.name must be 1-64 letters, digits, _ or -`);
    if (fn['description'] !== undefined && typeof fn['description'] !== 'string')
      throw invalid(`${at}.function.description must be a string`);
    const parameters = fn['parameters'];
    if (parameters !== undefined) {
      if (!isObject(parameters) || parameters['type'] !== 'object')
        throw invalid(`${at}.function.parameters must be a JSON Schema object with type "object"`);
      if (parameters['properties'] !== undefined && !isObject(parameters['properties']))
        throw invalid(`${at}.function.parameters.properties must be an object`);
      const required = parameters['required'];
      if (
        required !== undefined &&
        (!Array.isArray(required) || !required.every((name) => typeof name === 'string'))
      ) {
        throw invalid(`${at}.function.parameters.required must be an array of names`);
      }
    }
    parseCacheControl(tool['cache_control'], at);
    const definition: ToolDefinition = { type: 'function', function: { name: fn['name'] } };
    if (typeof fn['description'] === 'string') definition.function.description = fn['description'];
    if (parameters !== undefined) definition.function.parameters = parameters;
    return definition;
  });
}

function checkToolChoice(raw: unknown, tools: ToolDefinition[] | undefined): void {
  if (raw === undefined || raw === null) return;
  if (raw === 'none' || raw === 'auto' || raw === 'required') {
    if (raw === 'required' && !tools?.length) throw invalid('tool_choice "required" needs tools');
    return;
  }
  if (
    isObject(raw) &&
    raw['type'] === 'function' &&
    isObject(raw['function']) &&
    typeof raw['function']['name'] === 'string'
  ) {
    const name = raw['function']['name'];
    if (!tools?.some((tool) => tool.function.name === name))
      throw invalid(`tool_choice names ${name}, which is not in tools`);
    return;
  }
  throw invalid('tool_choice must be "none", "auto", "required" or {"type":"function","function":{"name"}}');
}

function checkResponseFormat(raw: unknown): void {
  if (raw === undefined || raw === null) return;
  const kind = isObject(raw) ? raw['type'] : undefined;
  if (kind === 'text' || kind === 'json_object') return;
  if (kind !== 'json_schema' || !isObject(raw))
    throw invalid('response_format.type must be "text", "json_object" or "json_schema"');
  const spec = raw['json_schema'];
  if (!isObject(spec) || typeof spec['name'] !== 'string' || !FUNCTION_NAME.test(spec['name']))
    throw invalid('response_format.json_schema.name must be 1-64 letters, digits, _ or -');
  if (spec['schema'] !== undefined && !isObject(spec['schema']))
    throw invalid('response_format.json_schema.schema must be a JSON Schema object');
  if (spec['strict'] !== undefined && spec['strict'] !== null && typeof spec['strict'] !== 'boolean')
    throw invalid('response_format.json_schema.strict must be a boolean');
}
