import type { ProviderConfig, TimeoutsConfig } from '../../core/config.ts';
import type { ChatBody, ChatChunk, ChatCompletion, ToolDefinition } from '../../core/chat-types.ts';
import { callHeaders, type PassThroughProvider, type ProviderCall } from '../../core/provider.ts';
import { ProviderError } from '../../core/provider-error.ts';
import { ChunkScanner } from './scan-chunk.ts';
import type { PassChunk } from '../../core/raw-chunk.ts';
import { createUpstreamClient, DONE, parseEventData, errorFromResponse } from '../upstream-http.ts';
import { type EventDecoder, readEventBatches } from '../event-batches.ts';
import { chunkEvents } from './chunk-events.ts';
import { keepUpstreamJson } from '../../core/upstream-json.ts';

/**
 * Any OpenAI-compatible upstream (OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp, DeepSeek, Groq, Together,
 * Mistral …): the client's body goes through unchanged but for `model`, and streams always ask for usage.
 */
export function createOpenAIProvider(config: ProviderConfig, timeouts: TimeoutsConfig): PassThroughProvider {
  const client = createUpstreamClient(config.baseUrl, timeouts);
  const headers: Record<string, string> = { ...config.headers };
  if (config.apiKey) headers['authorization'] = `Bearer ${config.apiKey}`;

  const streamHeaders = { ...headers, accept: 'text/event-stream' };

  return {
    id: config.id,
    async complete(call) {
      const body: Record<string, unknown> = {
        ...withoutCacheMarks(call.request.body),
        model: call.upstreamModel,
        stream: false,
      };
      delete body['stream_options'];
      const answer = await client.postJsonText(
        '/chat/completions',
        callHeaders(headers, call),
        JSON.stringify(body),
        call.signal,
      );
      const parsed = answer.value;
      if (!isCompletion(parsed))
        throw new ProviderError('protocol', 'upstream answer is not a chat completion');
      // The answer goes back in the upstream's own words but for `model`: no serialising of the parse.
      keepUpstreamJson(parsed, answer.text);
      return parsed;
    },
    async *stream(call) {
      const response = await client.post(
        '/chat/completions',
        callHeaders(streamHeaders, call),
        streamBody(call),
        call.signal,
      );
      if (response.status !== 200) throw await errorFromResponse(response);
      yield* readEventBatches(response, call.signal, chatChunkDecoder());
    },
    passThrough(call) {
      const scanner = new ChunkScanner();
      return client.postEvents(
        '/chat/completions',
        callHeaders(streamHeaders, call),
        streamBody(call),
        call.signal,
        (data) => decodeEvent(data, scanner),
      );
    },
    close: () => client.close(),
  };
}

const streamBody = (call: ProviderCall): string =>
  JSON.stringify({
    ...withoutCacheMarks(call.request.body),
    model: call.upstreamModel,
    stream: true,
    stream_options: { include_usage: true },
  });

const hasMark = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && 'cache_control' in value;

const unmarked = (value: unknown): unknown => {
  if (!hasMark(value)) return value;
  const rest = { ...value };
  delete rest['cache_control'];
  return rest;
};

/**
 * The body without Anthropic's `cache_control` marks on content parts and tools (OpenAI's API refuses fields it
 * does not know, and caches prefixes on its own); the same object, untouched, when nothing is marked.
 */
export function withoutCacheMarks(body: ChatBody): ChatBody {
  const messages = Array.isArray(body['messages']) ? (body['messages'] as unknown[]) : [];
  const markedPart = (message: unknown): boolean =>
    typeof message === 'object' &&
    message !== null &&
    Array.isArray((message as { content?: unknown }).content) &&
    (message as { content: unknown[] }).content.some(hasMark);
  const markedMessages = messages.some(markedPart);
  const markedTools = Array.isArray(body.tools) && body.tools.some(hasMark);
  if (!markedMessages && !markedTools) return body;
  const copy: ChatBody = { ...body };
  if (markedMessages)
    copy['messages'] = messages.map((message) =>
      markedPart(message)
        ? { ...(message as object), content: (message as { content: unknown[] }).content.map(unmarked) }
        : message,
    );
  if (markedTools) copy.tools = body.tools!.map((tool) => unmarked(tool) as ToolDefinition);
  return copy;
}

/** A stream event's JSON as a chunk; the upstream's in-band error, or a protocol error for anything else. */
function checkedChunk(value: unknown): ChatChunk {
  if (isErrorEvent(value))
    throw new ProviderError('status', value.error.message ?? 'upstream stream error', { status: 500 });
  if (!isChunk(value))
    throw new ProviderError('protocol', 'upstream sent an event that is not a chat completion chunk');
  return value;
}

const DONE_BYTES = Buffer.from('[DONE]');

/** The canonical path's reading of a chat-completions stream: each chunk parsed, checked and turned into events. */
function chatChunkDecoder(): EventDecoder {
  let started = false;
  return {
    event(data, out) {
      if (data.equals(DONE_BYTES)) return true;
      chunkEvents(checkedChunk(parseEventData(data.toString())), out, started);
      started = true;
      return false;
    },
    end() {
      throw new ProviderError('protocol', 'upstream stream ended without [DONE]');
    },
  };
}

/**
 * The fast path's reading of one event: `[DONE]`; a chunk checked and passed through as bytes (the stream's
 * ChunkScanner); or, for any chunk the scan leaves to a parse, the same parse and checks as the canonical path.
 */
function decodeEvent(data: Buffer, scanner: ChunkScanner): PassChunk | typeof DONE {
  if (data.length === DONE_BYTES.length && data.equals(DONE_BYTES)) return DONE;
  return scanner.scan(data) ?? checkedChunk(parseEventData(data.toString()));
}

// Lenient checks on what upstreams answer: the fields we rely on, nothing more.
function isCompletion(value: unknown): value is ChatCompletion {
  const v = value as ChatCompletion | null;
  return typeof v === 'object' && v !== null && Array.isArray(v.choices);
}

function isChunk(value: unknown): value is ChatChunk {
  const v = value as ChatChunk | null;
  return typeof v === 'object' && v !== null && Array.isArray(v.choices);
}

function isErrorEvent(value: unknown): value is { error: { message?: string } } {
  const v = value as { error?: unknown } | null;
  return typeof v === 'object' && v !== null && typeof v.error === 'object' && v.error !== null;
}
