import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { decode, encode } from 'gpt-tokenizer';
import { countPromptTokens, countTextTokens } from '../../gateway/count-tokens.ts';
import type {
  ChatChunk,
  ChatCompletion,
  ChatRequest,
  FinishReason,
  ToolCall,
  ToolDefinition,
} from '../../gateway/chat-types.ts';
import { type Provider, ProviderError } from '../provider.ts';

const WORDS = (
  'the gateway answers every request with care and counts each token it sends so that the ledger stays exact ' +
  'while the model thinks about your question and writes a short reply that is useful deterministic and kind'
).split(' ');

interface Answer {
  text: string;
  toolCall: ToolCall | undefined;
  finishReason: FinishReason;
  completionTokens: number;
}

/**
 * A deterministic local model: the same request gets the same answer, with exact token counts. It streams
 * one word per chunk at a configured pace and answers a tools request with a well-formed tool call.
 */
export function createSimulatorProvider(options: {
  id: string;
  chunkIntervalMs: number;
  firstTokenMs: number;
}): Provider {
  return {
    id: options.id,
    async complete(call) {
      await pause(options.firstTokenMs, call.signal);
      const answer = compose(call.request);
      const promptTokens = countPromptTokens(call.request.messages, call.request.tools);
      const completion: ChatCompletion = {
        id: completionId(call.request),
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: call.upstreamModel,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: answer.toolCall ? null : answer.text,
              ...(answer.toolCall ? { tool_calls: [answer.toolCall] } : {}),
            },
            finish_reason: answer.finishReason,
          },
        ],
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: answer.completionTokens,
          total_tokens: promptTokens + answer.completionTokens,
        },
      };
      return completion;
    },
    async *stream(call) {
      const answer = compose(call.request);
      const promptTokens = countPromptTokens(call.request.messages, call.request.tools);
      const base = {
        id: completionId(call.request),
        object: 'chat.completion.chunk' as const,
        created: Math.floor(Date.now() / 1000),
        model: call.upstreamModel,
      };
      const chunk = (
        delta: ChatChunk['choices'][number]['delta'],
        finish: FinishReason | null = null,
      ): ChatChunk => ({
        ...base,
        choices: [{ index: 0, delta, finish_reason: finish }],
      });
      await pause(options.firstTokenMs, call.signal);
      if (answer.toolCall) {
        const { id, function: fn } = answer.toolCall;
        yield chunk({
          role: 'assistant',
          content: null,
          tool_calls: [{ index: 0, id, type: 'function', function: { name: fn.name, arguments: '' } }],
        });
        await pause(options.chunkIntervalMs, call.signal);
        yield chunk({ tool_calls: [{ index: 0, function: { arguments: fn.arguments } }] });
      } else {
        const pieces = answer.text.split(/(?= )/);
        for (const [index, piece] of pieces.entries()) {
          if (index > 0) await pause(options.chunkIntervalMs, call.signal);
          yield chunk(index === 0 ? { role: 'assistant', content: piece } : { content: piece });
        }
      }
      yield chunk({}, answer.finishReason);
      yield {
        ...base,
        choices: [],
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: answer.completionTokens,
          total_tokens: promptTokens + answer.completionTokens,
        },
      };
    },
    async close() {},
  };
}

async function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) throw new ProviderError('aborted', 'request aborted');
  if (ms <= 0) return;
  try {
    await sleep(ms, undefined, { signal });
  } catch (error) {
    throw new ProviderError('aborted', 'request aborted', { cause: error });
  }
}

function digest(request: ChatRequest): Buffer {
  const hash = createHash('sha256');
  hash.update(request.model);
  for (const message of request.messages) hash.update(`\u0000${message.role}\u0000${message.content ?? ''}`);
  return hash.digest();
}

function completionId(request: ChatRequest): string {
  return `chatcmpl-sim${digest(request).toString('hex').slice(0, 20)}`;
}

/** The deterministic answer: a tool call when tools are offered and not yet used, else text. */
function compose(request: ChatRequest): Answer {
  const seed = digest(request);
  const last = request.messages.at(-1);
  const tool = pickTool(request);
  if (tool && last?.role !== 'tool') {
    const args = JSON.stringify(exampleArguments(tool));
    const toolCall: ToolCall = {
      id: `call_${seed.toString('hex').slice(0, 24)}`,
      type: 'function',
      function: { name: tool.function.name, arguments: args },
    };
    return {
      text: '',
      toolCall,
      finishReason: 'tool_calls',
      completionTokens: countTextTokens(tool.function.name) + countTextTokens(args) + 3,
    };
  }
  const wordCount = 12 + ((seed[0] ?? 0) % 24);
  const words: string[] = [];
  for (let i = 0; i < wordCount; i++) words.push(WORDS[(seed[i % seed.length]! + i * 7) % WORDS.length]!);
  let text = `${last?.role === 'tool' ? 'From the tool result: ' : ''}${words.join(' ')}.`;
  text = text[0]!.toUpperCase() + text.slice(1);
  const tokens = encode(text);
  if (request.maxTokens !== undefined && tokens.length > request.maxTokens) {
    return {
      text: decode(tokens.slice(0, request.maxTokens)),
      toolCall: undefined,
      finishReason: 'length',
      completionTokens: request.maxTokens,
    };
  }
  return { text, toolCall: undefined, finishReason: 'stop', completionTokens: tokens.length };
}

function pickTool(request: ChatRequest): ToolDefinition | undefined {
  const { tools, toolChoice } = request;
  if (!tools?.length || toolChoice === 'none') return undefined;
  if (typeof toolChoice === 'object')
    return tools.find((tool) => tool.function.name === toolChoice.function.name);
  return tools[0];
}

/** Arguments that satisfy the tool's schema: each required property with a value of its type. */
function exampleArguments(tool: ToolDefinition): Record<string, unknown> {
  const parameters = tool.function.parameters ?? {};
  const properties = (parameters['properties'] ?? {}) as Record<string, { type?: string; enum?: unknown[] }>;
  const required = (parameters['required'] ?? Object.keys(properties)) as string[];
  const args: Record<string, unknown> = {};
  for (const name of required) {
    const schema = properties[name] ?? {};
    if (schema.enum?.length) args[name] = schema.enum[0];
    else if (schema.type === 'number' || schema.type === 'integer') args[name] = 1;
    else if (schema.type === 'boolean') args[name] = true;
    else if (schema.type === 'array') args[name] = [];
    else if (schema.type === 'object') args[name] = {};
    else args[name] = 'example';
  }
  return args;
}
