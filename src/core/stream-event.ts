import type { FinishReason, Usage } from './chat-types.ts';

/**
 * The canonical events of a streamed answer, in no wire format: providers translate their upstream's stream into
 * them, the gateway meters and relays them, each front door writes them in its client's protocol. They travel in
 * batches (what one upstream read brought), so a door can answer one read with one write. Plain objects: a provider
 * makes one per event it relays and nothing else.
 *
 * Order: `start` first; then `text`, `tool` and `finish` as the upstream sends them; `usage` (the upstream's count)
 * last, when the upstream gives one. A failure is not an event of the provider's: its stream throws a ProviderError,
 * and the gateway hands the front door the error (`StreamSink.fail`).
 */
export type StreamEvent = StartEvent | TextEvent | ToolEvent | FinishEvent | UsageEvent;

/** The answer begins (the assistant's turn): the upstream's id for it and its creation time (Unix seconds). */
export interface StartEvent {
  readonly type: 'start';
  readonly id: string;
  readonly created: number;
}

/** A piece of the answer's text (possibly empty: an upstream's empty delta is relayed as it came). */
export interface TextEvent {
  readonly type: 'text';
  readonly text: string;
}

/**
 * A piece of a tool call: its first piece carries the call's `id` and `name` (and perhaps already its arguments),
 * later ones only an argument fragment. `index` counts the answer's calls from 0.
 */
export interface ToolEvent {
  readonly type: 'tool';
  readonly index: number;
  readonly id: string | undefined;
  readonly name: string | undefined;
  readonly args: string;
}

/** Why the answer ended. */
export interface FinishEvent {
  readonly type: 'finish';
  readonly reason: FinishReason;
  /** The stop sequence that ended it, where the upstream says which. */
  readonly stopSequence?: string;
}

/** The upstream's token count of the request and answer. */
export interface UsageEvent {
  readonly type: 'usage';
  readonly usage: Usage;
}

/** The events one upstream read completed, in order. */
export type EventBatch = StreamEvent[];
