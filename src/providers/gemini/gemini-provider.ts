import type { ProviderConfig, TimeoutsConfig } from '../../config/config.ts';
import type { ChatChunk } from '../../gateway/chat-types.ts';
import { type Provider, ProviderError } from '../provider.ts';
import {
  createUpstreamClient,
  parseEventData,
  errorFromResponse,
  readEvents,
  releaseBody,
  toProviderError,
} from '../upstream-http.ts';
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
        streamHeaders,
        body,
        call.signal,
      );
      if (response.status !== 200) throw await errorFromResponse(response);
      const base = {
        id: '',
        object: 'chat.completion.chunk' as const,
        created: Math.floor(Date.now() / 1000),
        model: call.upstreamModel,
      };
      const chunk = (
        delta: ChatChunk['choices'][number]['delta'],
        finish: ChatChunk['choices'][number]['finish_reason'] = null,
      ): ChatChunk => ({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] });
      let finished = false;
      let started = false;
      let toolCount = 0;
      let usage: GeminiResponse['usageMetadata'];
      try {
        for await (const event of readEvents(response)) {
          const data = parseEventData(event.data) as GeminiResponse;
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
          if (!base.id) base.id = `chatcmpl-${data.responseId ?? 'gemini'}`;
          if (data.modelVersion) base.model = data.modelVersion;
          if (data.usageMetadata) usage = data.usageMetadata;
          if (!started) {
            started = true;
            yield chunk({ role: 'assistant', content: '' });
          }
          const candidate = data.candidates?.[0];
          const parts = candidate?.content?.parts ?? [];
          const text = textOf(parts);
          if (text) yield chunk({ content: text });
          for (const part of parts) {
            if (!part.functionCall) continue;
            const call_ = toToolCall(part.functionCall);
            yield chunk({
              tool_calls: [{ index: toolCount++, id: call_.id, type: 'function', function: call_.function }],
            });
          }
          const blocked = !candidate && data.promptFeedback?.blockReason !== undefined;
          const finish = blocked
            ? 'content_filter'
            : mapGeminiFinishReason(candidate?.finishReason, toolCount > 0);
          if (finish) {
            finished = true;
            yield chunk({}, finish);
          }
        }
      } catch (error) {
        throw toProviderError(error, call.signal);
      } finally {
        releaseBody(response.body, finished);
      }
      if (!finished) throw new ProviderError('protocol', 'upstream stream ended without a finish reason');
      yield { ...base, choices: [], usage: geminiUsage(usage) };
    },
    close: () => client.close(),
  };
}
