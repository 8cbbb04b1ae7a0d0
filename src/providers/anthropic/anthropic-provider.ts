import type { ProviderConfig, TimeoutsConfig } from '../../config/config.ts';
import type { EventBatch } from '../../gateway/stream-event.ts';
import { type EventDecoder, readEventBatches } from '../event-batches.ts';
import { callHeaders, type Provider, ProviderError } from '../provider.ts';
import { createUpstreamClient, errorFromResponse, parseEventData } from '../upstream-http.ts';
import {
  STRUCTURED_TOOL,
  type AnthropicResponse,
  type AnthropicUsage,
  anthropicUsage,
  convertAnthropicResponse,
  convertToAnthropicRequest,
  mapAnthropicStopReason,
} from './convert-anthropic.ts';
import { quietEvent, textDeltaOf } from './text-delta.ts';
import { anthropicChunks } from './anthropic-chunks.ts';

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
        callHeaders(headers, call),
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
      const response = await client.post(path, callHeaders(headers, call), JSON.stringify(body), call.signal);
      if (response.status !== 200) throw await errorFromResponse(response);
      yield* readEventBatches(response, call.signal, anthropicDecoder());
    },
    passThrough(call) {
      const body = convertToAnthropicRequest(call.request, call.upstreamModel, call.defaultMaxTokens, true);
      return client.postEvents(
        path,
        callHeaders(headers, call),
        JSON.stringify(body),
        call.signal,
        anthropicChunks(anthropicDecoder()),
      );
    },
    close: () => client.close(),
  };
}

/**
 * The Messages API stream as canonical events: message_start → start; a text block's text and its text_delta →
 * text; a tool_use block → a tool call (its start, then its input_json_delta fragments), except the structured-answer
 * tool, whose input streams as text; message_delta → finish; message_stop → usage, and the end. A text_delta in
 * Anthropic's own form is read off its bytes (textDeltaOf), a ping or a block's end skipped off them (quietEvent);
 * every other event is parsed.
 */
export function anthropicDecoder(): EventDecoder {
  const created = Math.floor(Date.now() / 1000);
  let usage: AnthropicUsage = {};
  /** Tool calls by content block index: their index among the answer's calls. */
  const tools = new Map<number, number>();
  /** Block indexes of the structured-answer tool: their input streams as content. */
  const structured = new Set<number>();
  let stopped = false;
  return {
    event(data: Buffer, out: EventBatch): boolean {
      const text = textDeltaOf(data);
      if (text !== undefined) {
        out.push({ type: 'text', text });
        return false;
      }
      if (quietEvent(data)) return false;
      const event = parseEventData(data.toString()) as StreamEvent;
      switch (event.type) {
        case 'message_start':
          usage = { ...event.message?.usage };
          out.push({ type: 'start', id: event.message?.id ?? '', created });
          break;
        case 'content_block_start': {
          const block = event.content_block;
          if (block?.type === 'tool_use' && block.name === STRUCTURED_TOOL) {
            structured.add(event.index ?? 0);
          } else if (block?.type === 'tool_use') {
            const index = tools.size;
            tools.set(event.index ?? 0, index);
            out.push({ type: 'tool', index, id: block.id ?? '', name: block.name ?? '', args: '' });
          } else if (block?.type === 'text' && block.text) {
            out.push({ type: 'text', text: block.text });
          }
          break;
        }
        case 'content_block_delta': {
          const delta = event.delta;
          if (delta?.type === 'text_delta') out.push({ type: 'text', text: delta.text ?? '' });
          else if (delta?.type === 'input_json_delta' && structured.has(event.index ?? 0)) {
            if (delta.partial_json) out.push({ type: 'text', text: delta.partial_json });
          } else if (delta?.type === 'input_json_delta') {
            const index = tools.get(event.index ?? 0) ?? 0;
            out.push({ type: 'tool', index, id: undefined, name: undefined, args: delta.partial_json ?? '' });
          }
          break;
        }
        case 'message_delta': {
          // output_tokens here is the running total, not an increment.
          usage = { ...usage, ...event.usage };
          stopped = true;
          const finish = mapAnthropicStopReason(event.delta?.stop_reason);
          // A forced structured answer ends in tool_use; to the client it is a finished answer.
          if (finish !== null)
            out.push({
              type: 'finish',
              reason: finish === 'tool_calls' && tools.size === 0 ? 'stop' : finish,
            });
          break;
        }
        case 'message_stop': {
          // A message_stop with no message_delta before it still ends the choice.
          if (!stopped) out.push({ type: 'finish', reason: 'stop' });
          out.push({ type: 'usage', usage: anthropicUsage(usage) });
          return true;
        }
        case 'error': {
          const kind = event.error?.type ?? 'api_error';
          throw new ProviderError('status', event.error?.message ?? kind, {
            status: kind === 'overloaded_error' ? 529 : 500,
          });
        }
        default:
          break; // ping and event types added later are ignored
      }
      return false;
    },
    end() {
      throw new ProviderError('protocol', 'upstream stream ended without message_stop');
    },
  };
}
