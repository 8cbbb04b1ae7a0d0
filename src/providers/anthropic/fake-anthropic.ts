import type { ServerResponse } from 'node:http';
import {
  type Behaviour,
  type FakeUpstream,
  drip,
  fail,
  finish,
  pieces,
  sse,
  startFakeUpstream,
} from '../fake-upstream.ts';

/**
 * A fake Anthropic Messages API on a loopback port, in the documented wire format: POST /v1/messages, named
 * SSE events message_start … message_stop, errors as {type:"error",error}. `url` is the API root.
 */
export function startFakeAnthropic(): Promise<FakeUpstream> {
  return startFakeUpstream({
    root: '',
    serve: (behaviour, body, response) => serveAnthropic(behaviour, body, response),
  });
}

/** One Anthropic Messages stream event: `event: <type>` and `data: {"type": <type>, …}`. */
export const anthropicEvent = (name: string, data: object = {}): string =>
  `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;

/** Anthropic's message_start event, with the usage it documents (output_tokens starts at 1). */
export const anthropicStart = (inputTokens = 21): string =>
  anthropicEvent('message_start', {
    message: {
      id: 'msg_fake01',
      type: 'message',
      role: 'assistant',
      content: [],
      model: 'claude-test',
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: inputTokens, output_tokens: 1 },
    },
  });

export const anthropicText = (text: string): string =>
  anthropicEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text } });

function serveAnthropic(behaviour: Behaviour, body: any, response: ServerResponse): void {
  const errorType = (status: number): string =>
    ({
      400: 'invalid_request_error',
      401: 'authentication_error',
      429: 'rate_limit_error',
      529: 'overloaded_error',
    })[status] ?? 'api_error';
  if (
    fail(behaviour, response, (status, message) => ({
      type: 'error',
      error: { type: errorType(status), message },
    }))
  )
    return;
  const id = 'msg_fake01';
  const toolCall = behaviour.kind === 'ok' ? behaviour.toolCall : undefined;
  const items = pieces(behaviour);
  const usage = {
    input_tokens: 21,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: toolCall ? 9 : items.length,
  };
  if (!body.stream) {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({
        id,
        type: 'message',
        role: 'assistant',
        model: body.model,
        content: toolCall
          ? [
              {
                type: 'tool_use',
                id: 'toolu_fake1',
                name: toolCall.name,
                input: JSON.parse(toolCall.arguments),
              },
            ]
          : [{ type: 'text', text: items.join('') }],
        stop_reason: toolCall ? 'tool_use' : 'end_turn',
        stop_sequence: null,
        usage,
      }),
    );
    return;
  }
  const event = (name: string, data: object): string =>
    `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
  sse(response);
  response.write(
    event('message_start', {
      message: {
        id,
        type: 'message',
        role: 'assistant',
        content: [],
        model: body.model,
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 },
      },
    }),
  );
  if (toolCall) {
    response.write(
      event('content_block_start', {
        index: 0,
        content_block: { type: 'tool_use', id: 'toolu_fake1', name: toolCall.name, input: {} },
      }),
    );
    response.write(
      event('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: '' } }),
    );
    response.write(
      event('content_block_delta', {
        index: 0,
        delta: { type: 'input_json_delta', partial_json: toolCall.arguments },
      }),
    );
    response.write(event('content_block_stop', { index: 0 }));
    response.write(
      event('message_delta', {
        delta: { stop_reason: 'tool_use', stop_sequence: null },
        usage: { output_tokens: usage.output_tokens },
      }),
    );
    finish(response, event('message_stop', {}));
    return;
  }
  response.write(event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
  response.write(event('ping', {}));
  void drip(
    items,
    (item) =>
      response.write(event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: item } })),
    behaviour,
    response,
  ).then((complete) => {
    if (!complete) return;
    response.write(event('content_block_stop', { index: 0 }));
    response.write(
      event('message_delta', {
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: usage.output_tokens },
      }),
    );
    finish(response, event('message_stop', {}));
  });
}
