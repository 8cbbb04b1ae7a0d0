import type { ChatBody, ResponseFormat, ToolChoice, ToolDefinition } from './chat-types.ts';

/** The spec's default temperature, sent upstream when the request sets none (upstreams' own defaults differ). */
export const DEFAULT_TEMPERATURE = 0.7;

/** The parameters a translating adapter turns into its upstream's words, read from a request body. */
export interface KnownParams {
  temperature: number | undefined;
  topP: number | undefined;
  /** The lower of `max_tokens` and `max_completion_tokens` (one parameter under two names). */
  maxTokens: number | undefined;
  stop: string[] | undefined;
  tools: ToolDefinition[] | undefined;
  toolChoice: ToolChoice | undefined;
  /** Structured output asked for; undefined when absent or `{"type":"text"}`. */
  responseFormat: ResponseFormat | undefined;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const numberOf = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) ? value : undefined;

/**
 * The known parameters of `body` as it stands (after a deployment's policy). Lenient: the client's fields were
 * validated on arrival, but a policy's `defaults` are the operator's, so a value of the wrong type reads as unset.
 */
export function knownParams(body: ChatBody): KnownParams {
  const maxTokens = numberOf(body.max_tokens);
  const maxCompletion = numberOf(body.max_completion_tokens);
  return {
    temperature: numberOf(body.temperature),
    topP: numberOf(body.top_p),
    maxTokens:
      maxTokens === undefined
        ? maxCompletion
        : maxCompletion === undefined
          ? maxTokens
          : Math.min(maxTokens, maxCompletion),
    stop: stopOf(body.stop),
    tools: Array.isArray(body.tools) && body.tools.length > 0 ? body.tools : undefined,
    toolChoice: toolChoiceOf(body.tool_choice),
    responseFormat: responseFormatOf(body.response_format),
  };
}

/** `max_tokens` or `max_completion_tokens` (the lower when both), as `knownParams` reads it. */
export const maxTokensOf = (body: ChatBody): number | undefined => knownParams(body).maxTokens;

function stopOf(value: unknown): string[] | undefined {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return value;
  return undefined;
}

function toolChoiceOf(value: unknown): ToolChoice | undefined {
  if (value === 'none' || value === 'auto' || value === 'required') return value;
  if (isObject(value) && value['type'] === 'function' && isObject(value['function'])) {
    const name = value['function']['name'];
    if (typeof name === 'string') return { type: 'function', function: { name } };
  }
  return undefined;
}

function responseFormatOf(value: unknown): ResponseFormat | undefined {
  if (!isObject(value)) return undefined;
  if (value['type'] === 'json_object') return { type: 'json_object' };
  const spec = value['json_schema'];
  if (value['type'] !== 'json_schema' || !isObject(spec) || typeof spec['name'] !== 'string')
    return undefined;
  const format: ResponseFormat = {
    type: 'json_schema',
    json_schema: { name: spec['name'], schema: isObject(spec['schema']) ? spec['schema'] : {} },
  };
  if (typeof spec['description'] === 'string') format.json_schema.description = spec['description'];
  if (typeof spec['strict'] === 'boolean') format.json_schema.strict = spec['strict'];
  return format;
}
