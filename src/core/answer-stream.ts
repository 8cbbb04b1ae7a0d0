import {
  type AnswerStream,
  offersPassThrough,
  type OpenedStream,
  type Provider,
  type ProviderCall,
  type StreamHandler,
  type StreamOpener,
} from './provider.ts';
import { ProviderError } from './provider-error.ts';
import type { EventBatch } from './stream-event.ts';

/** Opens the canonical form: `provider.stream`, delivered once its first batch arrived. */
export const openEvents = async (
  provider: Provider,
  call: ProviderCall,
): Promise<AnswerStream & { lane: 'events' }> => {
  const iterator = provider.stream(call)[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done) throw new ProviderError('protocol', 'upstream stream was empty');
  return { lane: 'events', stream: new IteratedStream(first.value, iterator) };
};

/** Opens the fast lane where the provider offers it, the canonical form elsewhere (a chat-completions door). */
export const openFastest: StreamOpener = async (provider: Provider, call: ProviderCall) =>
  offersPassThrough(provider)
    ? ({ lane: 'chunks', stream: await provider.passThrough(call) } satisfies AnswerStream)
    : openEvents(provider, call);

/**
 * A pulled stream (an async iterator of batches) pushed to a handler: one await per upstream read, a pause while
 * the handler is not keeping up. Failures end it (`end(failure)`); `stop` lets go of the upstream call, once.
 */
class IteratedStream implements OpenedStream<EventBatch> {
  readonly first: EventBatch;
  readonly #rest: AsyncIterator<EventBatch>;
  #handler: StreamHandler<EventBatch> | undefined;
  #resume: (() => void) | undefined;
  #stopped = false;
  #returned = false;

  constructor(first: EventBatch, rest: AsyncIterator<EventBatch>) {
    this.first = first;
    this.#rest = rest;
  }

  start(handler: StreamHandler<EventBatch>): void {
    this.#handler = handler;
    void this.#pump();
  }

  resume(): void {
    const resume = this.#resume;
    this.#resume = undefined;
    resume?.();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#returned) return;
    this.#returned = true;
    // A body nobody reads is paused, and a paused body's idle timer does not run: it is let go of here (a no-op for
    // one that already failed).
    void this.#rest.return?.().catch(() => {});
    this.resume();
  }

  async #pump(): Promise<void> {
    const handler = this.#handler!;
    let failure: unknown;
    try {
      for (;;) {
        const next = await this.#rest.next();
        if (next.done || this.#stopped) break;
        if (!handler.batch(next.value) && !this.#stopped)
          await new Promise<void>((resolve) => (this.#resume = resolve));
        if (this.#stopped) break;
      }
    } catch (error) {
      failure = error ?? new Error('stream failed');
    }
    handler.end(failure);
  }
}
