import type { IncomingMessage } from 'node:http';
import type { Admitted } from '../gateway/chat-gateway.ts';
import type { ChatCompletion } from '../gateway/chat-types.ts';
import type { StreamSink, TextSink } from '../gateway/stream-sink.ts';
import { GatewayError } from '../core/gateway-error.ts';
import type { Services } from './app-services.ts';
import type { AccountRecord, ApiKeyRecord } from '../core/records.ts';

/**
 * A client protocol: how its requests become the canonical chat request and how the canonical answer and stream
 * events go back out in its wire format. The pipeline behind every front door is the same (ChatGateway).
 */
export interface FrontDoor {
  /** The API key the client sent, in its protocol's header. */
  token(req: IncomingMessage): string | undefined;
  /** The headers that carry the request id on every answer (`x-request-id`, and the protocol's own). */
  idHeaders(requestId: string): Record<string, string>;
  /** Takes one parsed body: the canonical request's body (chat-completions shape) and the answer's encoders. */
  exchange(body: unknown): Exchange;
  /** A failure as this protocol's error object. */
  errorBody(error: GatewayError, requestId: string): unknown;
  /** Who calls, when not by an API key (the dashboard playground's session). */
  caller?(req: IncomingMessage, services: Pick<Services, 'sessions' | 'config'>): Promise<Caller>;
}

export interface Caller {
  key: ApiKeyRecord;
  account: AccountRecord;
}

export interface Exchange {
  /** The chat-completions body the gateway validates and sends upstream. */
  chatBody: unknown;
  /** Only count the prompt's tokens and answer with this (Messages' count_tokens); the model is not called. */
  countOnly?: (inputTokens: number) => unknown;
  streamSink(text: TextSink, admitted: Admitted): StreamSink;
  answer(completion: ChatCompletion, admitted: Admitted): unknown;
}

/**
 * A validation error of the chat-completions body, renamed into the field names of the protocol the client sent:
 * `renames` maps a chat field (the start of the error's `param` and message) to the client's own.
 */
export function renameFields(
  error: GatewayError,
  renames: readonly (readonly [string, string])[],
): GatewayError {
  const param = error.param;
  if (param === null) return error;
  for (const [from, to] of renames) {
    if (param !== from && !param.startsWith(`${from}.`) && !param.startsWith(`${from}[`)) continue;
    const message = error.message.startsWith(from) ? to + error.message.slice(from.length) : error.message;
    return new GatewayError(error.code, message, {
      cause: error,
      status: error.status,
      ...(error.rateLimits !== undefined ? { rateLimits: error.rateLimits } : {}),
      param: to + param.slice(from.length),
      ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}),
    });
  }
  return error;
}
