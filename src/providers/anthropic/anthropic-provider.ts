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
  STRUCTURED_TOOL,
  type AnthropicResponse,
  type AnthropicUsage,
  anthropicPromptTokens,
  convertAnthropicResponse,
  convertToAnthropicRequest,
  mapAnthropicStopReason,
} from './convert-anthropic.ts';

const API_VERSION = '2023-06-01';

/** The Messages API stream events, leniently: every field we read is optional. */
interface StreamEvent {
  type?: string;
  index?: number;
  message?: { id?: string; model?: string; usage?: AnthropicUsage };
  content_block?: { type?: string; id?: string; name?: string; text?: string };
  delta?: { type?: string; text?: string; partial_json?: string; stop_reason?: string | null };
  usage?: AnthropicUsage;
  error?: { type?: string; message?: string };
}

/** Anthropic's Messages API, in and out of the chat-completion convention. */
export function createAnthropicProvider(config: ProviderConfig, timeouts: TimeoutsConfig): Provider {
  const client = createUpstreamClient(config.baseUrl, timeouts);
  const path = config.baseUrl.endsWith('/v1') ? '/messages' : '/v1/messages';
  const headers: Record<string, string> = { 'anthropic-version': API_VERSION, ...config.headers };
  if (config.apiKey) headers['x-api-key'] = config.apiKey;

  return {
    id: config.id,
    async complete(call) {
      const body = convertToAnthropicRequest(call.request, call.upstreamModel, call.defaultMaxTokens, false);
      const parsed = (await client.postJson(
        path,
        headers,
        JSON.stringify(body),
        call.signal,
      )) as AnthropicResponse | null;
      if (!parsed || !Array.isArray(parsed.content) || typeof parsed.usage !== 'object') {
        throw new ProviderError('protocol', 'upstream answer is not a Messages API message');
      }
      return convertAnthropicResponse(parsed);
    },
    async *stream(call) {
      const body = convertToAnthropicRequest(call.request, call.upstreamModel, call.defaultMaxTokens, true);
      const response = await client.post(path, headers, JSON.stringify(body), call.signal);
      if (response.status !== 200) throw await errorFromResponse(response);
      let finished = false;
      const state = {
        id: '',
        model: call.upstreamModel,
        created: Math.floor(Date.now() / 1000),
        usage: {} as AnthropicUsage,
        tools: new Map<number, number>(),
        stopped: false,
        /** Block indexes of the structured-answer tool: their input streams as content. */
        structured: new Set<number>(),
      };
      const chunk = (
        delta: ChatChunk['choices'][number]['delta'],
        finish: ChatChunk['choices'][number]['finish_reason'] = null,
      ): ChatChunk => ({
        id: state.id,
        object: 'chat.completion.chunk',
        created: state.created,
        model: state.model,
        choices: [{ index: 0, delta, finish_reason: finish }],
      });
      try {
        for await (const event of readEvents(response)) {
          const data = parseEventData(event.data) as StreamEvent;
          switch (data.type) {
            case 'message_start':
              state.id = data.message?.id ?? '';
              state.model = data.message?.model ?? state.model;
              state.usage = { ...data.message?.usage };
              yield chunk({ role: 'assistant', content: '' });
              break;
            case 'content_block_start': {
              const block = data.content_block;
              if (block?.type === 'tool_use' && block.name === STRUCTURED_TOOL) {
                state.structured.add(data.index ?? 0);
              } else if (block?.type === 'tool_use') {
                const toolIndex = state.tools.size;
                state.tools.set(data.index ?? 0, toolIndex);
                yield chunk({
                  tool_calls: [
                    {
                      index: toolIndex,
                      id: block.id ?? '',
                      type: 'function',
                      function: { name: block.name ?? '', arguments: '' },
                    },
                  ],
                });
              } else if (block?.type === 'text' && block.text) {
                yield chunk({ content: block.text });
              }
              break;
            }
            case 'content_block_delta': {
              const delta = data.delta;
              if (delta?.type === 'text_delta') yield chunk({ content: delta.text ?? '' });
              else if (delta?.type === 'input_json_delta' && state.structured.has(data.index ?? 0)) {
                if (delta.partial_json) yield chunk({ content: delta.partial_json });
              } else if (delta?.type === 'input_json_delta') {
                const toolIndex = state.tools.get(data.index ?? 0) ?? 0;
                yield chunk({
                  tool_calls: [{ index: toolIndex, function: { arguments: delta.partial_json ?? '' } }],
                });
              }
              break;
            }
            case 'message_delta':
              // output_tokens here is the running total, not an increment.
              state.usage = { ...state.usage, ...data.usage };
              {
                state.stopped = true;
                const finish = mapAnthropicStopReason(data.delta?.stop_reason);
                // A forced structured answer ends in tool_use; to the client it is a finished answer.
                yield chunk({}, finish === 'tool_calls' && state.tools.size === 0 ? 'stop' : finish);
              }
              break;
            case 'message_stop': {
              finished = true;
              // A message_stop with no message_delta before it still ends the choice.
              if (!state.stopped) yield chunk({}, 'stop');
              const prompt = anthropicPromptTokens(state.usage);
              const completion = state.usage.output_tokens ?? 0;
              yield {
                ...chunk({}),
                choices: [],
                usage: {
                  prompt_tokens: prompt,
                  completion_tokens: completion,
                  total_tokens: prompt + completion,
                },
              };
              return;
            }
            case 'error': {
              const kind = data.error?.type ?? 'api_error';
              throw new ProviderError('status', data.error?.message ?? kind, {
                status: kind === 'overloaded_error' ? 529 : 500,
              });
            }
            default:
              break; // ping and event types added later are ignored
          }
        }
      } catch (error) {
        throw toProviderError(error, call.signal);
      } finally {
        releaseBody(response.body, finished);
      }
      throw new ProviderError('protocol', 'upstream stream ended without message_stop');
    },
    close: () => client.close(),
  };
}
