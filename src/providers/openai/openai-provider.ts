import type { ProviderConfig, TimeoutsConfig } from '../../core/config.ts';
import type { ChatChunk, ChatCompletion } from '../../gateway/chat-types.ts';
import { callHeaders, type Provider, type ProviderCall, ProviderError } from '../provider.ts';
import { ChunkScanner } from './scan-chunk.ts';
import type { PassChunk } from '../../gateway/raw-chunk.ts';
import { createUpstreamClient, DONE, parseEventData, errorFromResponse } from '../upstream-http.ts';
import { type EventDecoder, readEventBatches } from '../event-batches.ts';
import { chunkEvents } from './chunk-events.ts';
import { keepUpstreamJson } from '../../gateway/upstream-json.ts';

/**
 * Any OpenAI-compatible upstream (OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp, DeepSeek, Groq, Together,
 * Mistral …): the client's body goes through unchanged but for `model`, and streams always ask for usage.
 */
export function createOpenAIProvider(config: ProviderConfig, timeouts: TimeoutsConfig): Provider {
  const client = createUpstreamClient(config.baseUrl, timeouts);
  const headers: Record<string, string> = { ...config.headers };
  if (config.apiKey) headers['authorization'] = `Bearer ${config.apiKey}`;

  const streamHeaders = { ...headers, accept: 'text/event-stream' };

  return {
    id: config.id,
    async complete(call) {
      const body: Record<string, unknown> = {
        ...call.request.body,
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
    ...call.request.body,
    model: call.upstreamModel,
    stream: true,
    stream_options: { include_usage: true },
  });

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
