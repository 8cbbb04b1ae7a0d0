import type { CostBreakdown } from '../billing/pricing.ts';
import type { TokenKinds } from '../billing/token-kinds.ts';
import type { RateLimits } from '../core/rate-limits.ts';
import type { GatewayError } from '../core/gateway-error.ts';
import type { Usage } from '../core/chat-types.ts';
import type { PassChunk } from '../core/raw-chunk.ts';
import type { StreamEvent } from '../core/stream-event.ts';

/** Where a streamed answer's text goes: the HTTP layer's SSE writer, or anything else that can take text. */
export interface TextSink {
  /** Sends the status line and headers; nothing may be retried after this. */
  open(headers: Record<string, string>): void;
  /** Writes one piece; false when the client is not keeping up (await drain). Nothing once ended or closed. */
  write(data: string | Buffer): boolean;
  /**
   * Waits until the client has taken what was written. A client that has not caught up after `timeoutMs` is cut
   * off (the sink closes): one that stops reading can hold neither memory nor the upstream call for long.
   */
  drain(timeoutMs: number): Promise<void>;
  /** Ends the answer; safe to call more than once and after the client has gone. */
  end(): void;
  /** Optional: writes `last` and ends the answer, in one write with the end of the body. */
  endWith?(last: string): void;
  /** True once the client has gone. */
  readonly closed: boolean;
  onClose(listener: () => void): void;
}

/** What an answer's headers tell, as facts; the front door writes them (src/http/answer-headers.ts). */
export interface AnswerFacts {
  /** The key's rate limits after this request's admission. */
  rateLimits: RateLimits;
  /** The gateway's own time: to the upstream call (a stream), or the whole answer less the upstream's time. */
  overheadMs: number;
  /** What the answer cost, µUSD; undefined for a stream (it opens before the cost is known). */
  costMicros: number | undefined;
  /** What makes up that cost: the tokens by kind and each kind's cost (µUSD × 1,000,000, exact). */
  costBreakdown?: { kinds: TokenKinds; scaled: CostBreakdown } | undefined;
}

/**
 * A streamed answer as the gateway hands it to a front door, which writes it in its own protocol (chat-completion
 * chunks, Responses events, Messages events). The gateway writes no wire text.
 * Order: open, events…, then complete (a whole answer) or fail (an upstream that broke after its first event), end.
 */
export interface StreamSink extends Omit<TextSink, 'write' | 'open'> {
  /** Sends the status line and the headers `facts` make; nothing may be retried after this. */
  open(facts: AnswerFacts): void;
  /**
   * The canonical events one upstream read brought (stream-event.ts), in order, to be written as one piece. The
   * answer's public model id is the front door's to write (it has the admitted request). False when the client is
   * not keeping up (await drain).
   */
  events(batch: readonly StreamEvent[]): boolean;
  /**
   * The fast path, offered only by a front door whose protocol is chat completions: the chunks one upstream read
   * completed (parsed ones with `model` already the public id, raw ones with `model` to be set to `model`), written
   * in one write. False when the client is not keeping up (await drain).
   */
  passThrough?(batch: readonly PassChunk[], model: string): boolean;
  /** The answer is whole; `usage` is the upstream's, or the gateway's own count when it sent none. */
  complete(usage: Usage): void;
  /** The error event: the upstream failed after its first event, and the answer is incomplete. */
  fail(error: GatewayError): void;
}
