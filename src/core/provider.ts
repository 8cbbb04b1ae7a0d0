import type { ChatCompletion, ChatRequest } from './chat-types.ts';
import type { PassChunk } from './raw-chunk.ts';
import type { EventBatch } from './stream-event.ts';

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

/** Receives an opened stream's batches as each upstream read completes them. */
export interface StreamHandler<B> {
  /** The batch one upstream read completed; false pauses the stream until `resume()`. */
  batch(batch: B): boolean;
  /** The stream is over: after its terminal event, or with the failure (a ProviderError). Called once. */
  end(failure: unknown): void;
}

/**
 * An answer stream that has delivered its first read (the router counts it as delivered then), pushing the rest to
 * the handler given to `start`: no promise per batch where the upstream reader is push-based.
 */
export interface OpenedStream<B> {
  /** The batch of the read that opened it. */
  readonly first: B;
  /** Hands everything after `first` to `handler`, as it arrives. */
  start(handler: StreamHandler<B>): void;
  /** Goes on after `batch` returned false. */
  resume(): void;
  /** Lets go of the upstream call if it is still open; nothing more is handed over once the handler has ended. */
  stop(): void;
}

/** The fast lane's stream: chat-completion chunks, raw bytes where the scan could keep them so. */
export type PassThroughStream = OpenedStream<PassChunk[]>;
export type PassThroughHandler = StreamHandler<PassChunk[]>;

/**
 * One opened answer, in the form the door took: canonical events (every door can write them), or the fast lane's
 * chunks (a chat-completions door, from a provider that offers them).
 */
export type AnswerStream =
  | { readonly lane: 'events'; readonly stream: OpenedStream<EventBatch> }
  | { readonly lane: 'chunks'; readonly stream: PassThroughStream };

/** How a door opens a deployment's stream: which form it takes of what the provider offers. */
export type StreamOpener = (provider: Provider, call: ProviderCall) => Promise<AnswerStream>;
