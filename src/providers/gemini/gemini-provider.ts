import type { ProviderConfig, TimeoutsConfig } from '../../core/config.ts';
import type { EventBatch } from '../../gateway/stream-event.ts';
import { type EventDecoder, readEventBatches } from '../event-batches.ts';
import { callHeaders, type Provider, ProviderError } from '../provider.ts';
import { createUpstreamClient, errorFromResponse, parseEventData } from '../upstream-http.ts';
import {
  type GeminiResponse,
  convertGeminiResponse,
  convertToGeminiRequest,
  geminiUsage,
  mapGeminiFinishReason,
  textOf,
  toToolCall,
} from './convert-gemini.ts';

/**
 * Google's Gemini API (`models/{model}:generateContent`, and `:streamGenerateContent?alt=sse`), in and out of
 * the chat-completion convention. `base_url` is the API root with its version
 * (`https://generativelanguage.googleapis.com/v1beta`); the key goes in the `x-goog-api-key` header.
 */
export function createGeminiProvider(config: ProviderConfig, timeouts: TimeoutsConfig): Provider {
  const client = createUpstreamClient(config.baseUrl, timeouts);
  const headers: Record<string, string> = { ...config.headers };
  if (config.apiKey) headers['x-goog-api-key'] = config.apiKey;
  const streamHeaders = { ...headers, accept: 'text/event-stream' };
  const pathOf = (model: string, method: string): string => `/models/${encodeURIComponent(model)}:${method}`;

  return {
    id: config.id,
    async complete(call) {
      const body = JSON.stringify(convertToGeminiRequest(call.request));
      const parsed = (await client.postJson(
        pathOf(call.upstreamModel, 'generateContent'),
        headers,
        body,
        call.signal,
      )) as GeminiResponse | null;
      if (
        !parsed ||
        typeof parsed !== 'object' ||
        (!Array.isArray(parsed.candidates) && !parsed.promptFeedback)
      )
        throw new ProviderError('protocol', 'upstream answer is not a GenerateContentResponse');
      return convertGeminiResponse(parsed, call.upstreamModel);
    },
    async *stream(call) {
      const body = JSON.stringify(convertToGeminiRequest(call.request));
      const response = await client.post(
        `${pathOf(call.upstreamModel, 'streamGenerateContent')}?alt=sse`,
        callHeaders(streamHeaders, call),
        body,
        call.signal,
      );
      if (response.status !== 200) throw await errorFromResponse(response);
      yield* readEventBatches(response, call.signal, geminiDecoder());
    },
    close: () => client.close(),
  };
}

/**
 * The `streamGenerateContent` stream as canonical events: start with the first response; each response's visible
 * text, its function calls (whole: id, name and arguments at once) and its finish reason; the usage (the last
 * `usageMetadata` sent) once the body ends, which must come after a finish reason.
 */
export function geminiDecoder(): EventDecoder {
  const created = Math.floor(Date.now() / 1000);
  let started = false;
  let finished = false;
  let toolCount = 0;
  let usage: GeminiResponse['usageMetadata'];
  return {
    event(bytes: Buffer, out: EventBatch): boolean {
      const data = parseEventData(bytes.toString()) as GeminiResponse;
      if (data.error) {
        const status = data.error.code ?? 500;
        throw new ProviderError(
          'status',
          data.error.message ?? data.error.status ?? 'upstream stream error',
          {
            status: status >= 400 && status < 500 && status !== 429 ? 500 : status,
          },
        );
      }
      if (data.usageMetadata) usage = data.usageMetadata;
      if (!started) {
        started = true;
        out.push({ type: 'start', id: `chatcmpl-${data.responseId ?? 'gemini'}`, created });
      }
      const candidate = data.candidates?.[0];
      const parts = candidate?.content?.parts ?? [];
      const text = textOf(parts);
      if (text) out.push({ type: 'text', text });
      for (const part of parts) {
        if (!part.functionCall) continue;
        const call = toToolCall(part.functionCall);
        out.push({
          type: 'tool',
          index: toolCount++,
          id: call.id,
          name: call.function.name,
          args: call.function.arguments,
        });
      }
      const blocked = !candidate && data.promptFeedback?.blockReason !== undefined;
      const finish = blocked
        ? 'content_filter'
        : mapGeminiFinishReason(candidate?.finishReason, toolCount > 0);
      if (finish) {
        finished = true;
        out.push({ type: 'finish', reason: finish });
      }
      return false;
    },
    end(out: EventBatch): void {
      if (!finished) throw new ProviderError('protocol', 'upstream stream ended without a finish reason');
      out.push({ type: 'usage', usage: geminiUsage(usage) });
    },
  };
}
