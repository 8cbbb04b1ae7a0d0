import { randomBytes } from 'node:crypto';
import type {
  ChatCompletion,
  ChatMessage,
  ChatRequest,
  FinishReason,
  ToolCall,
  Usage,
} from '../../core/chat-types.ts';
import { knownParams } from '../../core/known-params.ts';
import { kindsOfGemini, usageOfKinds } from '../../billing/token-kinds.ts';

/** One part of a Gemini `Content` (the kinds we send or read; others are ignored). */
export interface GeminiPart {
  text?: string;
  thought?: boolean;
  functionCall?: { id?: string; name?: string; args?: Record<string, unknown> };
  functionResponse?: { id?: string; name: string; response: Record<string, unknown> };
}

interface GeminiContent {
  role: 'user' | 'model';
  parts: GeminiPart[];
}

export interface GeminiUsage {
  promptTokenCount?: number;
  cachedContentTokenCount?: number;
  candidatesTokenCount?: number;
  thoughtsTokenCount?: number;
  toolUsePromptTokenCount?: number;
  totalTokenCount?: number;
}

/** A `GenerateContentResponse`, leniently: every field we read is optional. */
export interface GeminiResponse {
  candidates?: { content?: { role?: string; parts?: GeminiPart[] }; finishReason?: string; index?: number }[];
  promptFeedback?: { blockReason?: string };
  usageMetadata?: GeminiUsage;
  modelVersion?: string;
  responseId?: string;
  error?: { code?: number; message?: string; status?: string };
}

/**
 * The canonical request as a `generateContent` body: system and developer turns become `systemInstruction`,
 * assistant turns `model` contents with `functionCall` parts, tool results `functionResponse` parts (named
 * after the call they answer), and `response_format` becomes `responseMimeType` plus `responseJsonSchema`.
 */
export function convertToGeminiRequest(request: ChatRequest): Record<string, unknown> {
  const system = request.messages
    .filter((message) => message.role === 'system' || message.role === 'developer')
    .map((message) => message.content ?? '')
    .join('\n\n');
  const callNames = new Map<string, string>();
  const contents: GeminiContent[] = [];
  for (const message of request.messages) {
    if (message.role === 'system' || message.role === 'developer') continue;
    for (const call of message.tool_calls ?? []) callNames.set(call.id, call.function.name);
    const converted = convertMessage(message, callNames);
    const previous = contents.at(-1);
    // Turns alternate between user and model: consecutive turns of one role become one.
    if (previous && previous.role === converted.role) previous.parts.push(...converted.parts);
    else contents.push(converted);
  }
  const body: Record<string, unknown> = { contents };
  if (system) body['systemInstruction'] = { parts: [{ text: system }] };

  const known = knownParams(request.body);
  const generationConfig: Record<string, unknown> = { temperature: known.temperature };
  if (known.topP !== undefined) generationConfig['topP'] = known.topP;
  if (known.maxTokens !== undefined) generationConfig['maxOutputTokens'] = known.maxTokens;
  if (known.stop) generationConfig['stopSequences'] = known.stop;
  const format = known.responseFormat;
  if (format) {
    generationConfig['responseMimeType'] = 'application/json';
    if (format.type === 'json_schema') generationConfig['responseJsonSchema'] = format.json_schema.schema;
  }
  body['generationConfig'] = generationConfig;

  if (known.tools) {
    body['tools'] = [
      {
        functionDeclarations: known.tools.map((tool) => ({
          name: tool.function.name,
          ...(tool.function.description ? { description: tool.function.description } : {}),
          ...(tool.function.parameters ? { parametersJsonSchema: tool.function.parameters } : {}),
        })),
      },
    ];
    const choice = known.toolChoice;
    if (choice === 'none') body['toolConfig'] = { functionCallingConfig: { mode: 'NONE' } };
    else if (choice === 'required') body['toolConfig'] = { functionCallingConfig: { mode: 'ANY' } };
    else if (typeof choice === 'object')
      body['toolConfig'] = {
        functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [choice.function.name] },
      };
  }
  return body;
}

function convertMessage(message: ChatMessage, callNames: ReadonlyMap<string, string>): GeminiContent {
  if (message.role === 'tool') {
    const id = message.tool_call_id ?? '';
    return {
      role: 'user',
      parts: [
        {
          functionResponse: {
            id,
            name: callNames.get(id) ?? message.name ?? id,
            response: toolResponse(message.content),
          },
        },
      ],
    };
  }
  const parts: GeminiPart[] = [];
  if (message.content) parts.push({ text: message.content });
  for (const call of message.tool_calls ?? []) {
    parts.push({
      functionCall: { id: call.id, name: call.function.name, args: parseArguments(call.function.arguments) },
    });
  }
  if (parts.length === 0) parts.push({ text: '' });
  return { role: message.role === 'assistant' ? 'model' : 'user', parts };
}

/** A tool's answer as the object `functionResponse.response` must be: a JSON object as is, anything else wrapped. */
function toolResponse(content: string | null): Record<string, unknown> {
  const text = content ?? '';
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
    return { result: parsed };
  } catch {
    return { result: text };
  }
}

function parseArguments(text: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(text) as unknown;
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/** Gemini's finish reasons in the convention's: blocks of every kind are `content_filter`. */
export function mapGeminiFinishReason(reason: string | undefined, calledTools: boolean): FinishReason | null {
  if (reason === undefined || reason === '' || reason === 'FINISH_REASON_UNSPECIFIED') return null;
  switch (reason) {
    case 'MAX_TOKENS':
      return 'length';
    case 'SAFETY':
    case 'RECITATION':
    case 'BLOCKLIST':
    case 'PROHIBITED_CONTENT':
    case 'SPII':
    case 'IMAGE_SAFETY':
    case 'IMAGE_PROHIBITED_CONTENT':
    case 'IMAGE_RECITATION':
      return 'content_filter';
    default:
      return calledTools ? 'tool_calls' : 'stop';
  }
}

/**
 * Prompt tokens (tool-use prompts included; the cached part, which `promptTokenCount` includes, told apart) and
 * output tokens (thinking included, as it is billed, and told apart as reasoning).
 */
export function geminiUsage(usage: GeminiUsage | undefined): Usage {
  return usageOfKinds(kindsOfGemini(usage));
}

/** A function call part as a tool call; Gemini gives ids only sometimes, so one is made when missing. */
export function toToolCall(call: NonNullable<GeminiPart['functionCall']>): ToolCall {
  return {
    id: call.id || `call_${randomBytes(12).toString('hex')}`,
    type: 'function',
    function: { name: call.name ?? '', arguments: JSON.stringify(call.args ?? {}) },
  };
}

/** The visible text of a candidate's parts (thought summaries left out). */
export const textOf = (parts: GeminiPart[]): string =>
  parts.map((part) => (part.thought || typeof part.text !== 'string' ? '' : part.text)).join('');

/** A whole `generateContent` answer as a chat completion. */
export function convertGeminiResponse(response: GeminiResponse, upstreamModel: string): ChatCompletion {
  const candidate = response.candidates?.[0];
  const parts = candidate?.content?.parts ?? [];
  const toolCalls = parts.flatMap((part) => (part.functionCall ? [toToolCall(part.functionCall)] : []));
  const text = textOf(parts);
  const blocked = !candidate && response.promptFeedback?.blockReason !== undefined;
  return {
    id: `chatcmpl-${response.responseId ?? randomBytes(12).toString('hex')}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: response.modelVersion ?? upstreamModel,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: toolCalls.length > 0 && text === '' ? null : text,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        finish_reason: blocked
          ? 'content_filter'
          : (mapGeminiFinishReason(candidate?.finishReason, toolCalls.length > 0) ?? 'stop'),
      },
    ],
    usage: geminiUsage(response.usageMetadata),
  };
}
