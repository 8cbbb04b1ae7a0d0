import type { ChatCompletion, ChatRequest } from './chat-types.ts';
import type { PassChunk } from './raw-chunk.ts';
import type { EventBatch } from './stream-event.ts';
import type { ProviderError } from './provider-error.ts';

export interface ProviderCall {
  request: ChatRequest;
  /** The model name the upstream knows. */
  upstreamModel: string;
  /** Aborts the upstream request (client gone, or the gateway gave up). */
  signal: AbortSignal;
  /** Used when the request sets no max_tokens but the upstream requires one (Anthropic). */
  defaultMaxTokens: number;
  /** Headers this call adds to the provider's own (a trace's `traceparent`). */
  headers?: Readonly<Record<string, string>> | undefined;
  /** Whose request it is (the simulator keeps its prompt cache per account, as upstreams do per organisation). */
  account?: string | undefined;
}

/** The provider's headers with the call's own added (the same object when the call has none). */
export const callHeaders = (base: Record<string, string>, call: ProviderCall): Record<string, string> =>
  call.headers === undefined ? base : { ...base, ...call.headers };

/** One upstream protocol: turns the canonical request into its wire format and its answers back. */
export interface Provider {
  readonly id: string;
  /** A whole answer; `model` is whatever the upstream said (the gateway puts the public id back). */
  complete(call: ProviderCall): Promise<ChatCompletion>;
  /**
   * The answer as canonical events (stream-event.ts), in upstream order, one non-empty batch per upstream read;
   * throws ProviderError on any failure, before or during the stream.
   */
  stream(call: ProviderCall): AsyncIterable<EventBatch>;
  close(): Promise<void>;
}

/**
 * A capability, beside `stream`: the fast lane, for a provider that can hand over its answer as chat-completion
 * chunks (an upstream that speaks chat completions, or one whose events it writes as such cheaply). A door whose
 * protocol is chat completions may take it; every other caller reads `stream`.
 */
export interface PassThroughProvider extends Provider {
  /**
   * Resolves once the first chunk arrived; rejects with a ProviderError before that (as `stream` would throw).
   */
  passThrough(call: ProviderCall): Promise<PassThroughStream>;
}

/** Whether a provider offers the fast lane. */
export const offersPassThrough = (provider: Provider): provider is PassThroughProvider =>
  typeof (provider as Partial<PassThroughProvider>).passThrough === 'function';

/** Receives a pass-through stream's chunks as each upstream read completes them. */
export interface PassThroughHandler {
  /** The chunks one upstream read completed, in order; false pauses the stream until `resume()`. */
  chunks(batch: PassChunk[]): boolean;
  /** The stream is over: after its terminal event, or with the failure (a ProviderError). Called once. */
  end(failure: ProviderError | undefined): void;
}

/**
 * A stream whose upstream speaks the client's protocol (chat completions), read without an async step per chunk:
 * the first chunks are there when it opens, the rest go to the handler given to `start`.
 */
export interface PassThroughStream {
  /** The chunks of the read that brought the first one. */
  readonly first: PassChunk[];
  /** Hands everything after `first` to `handler`, as it arrives. */
  start(handler: PassThroughHandler): void;
  /** Goes on after `chunks` returned false. */
  resume(): void;
}
