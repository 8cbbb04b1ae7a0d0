import type { StreamSink, TextSink } from '../gateway/stream-sink.ts';

/** What a front door writes of a stream in its own protocol; the rest of its StreamSink is its text sink's. */
export type DoorEncoder = Omit<StreamSink, 'closed' | 'drain' | 'onClose'>;

/**
 * A front door's StreamSink: its encoder, with `closed`, `drain` and `onClose` from its text sink. A class, so that
 * `closed` is a getter on the prototype: an object literal with a `get closed()` made per stream keeps everything
 * its closures hold (the stream's whole state, the request and response) alive through young-generation
 * collections until the next full one (docs/performance.md).
 */
class DoorSink implements StreamSink {
  readonly #text: TextSink;
  readonly #encoder: DoorEncoder;
  readonly passThrough?: NonNullable<StreamSink['passThrough']>;

  constructor(text: TextSink, encoder: DoorEncoder) {
    this.#text = text;
    this.#encoder = encoder;
    if (encoder.passThrough !== undefined) this.passThrough = encoder.passThrough;
  }

  open(facts: Parameters<StreamSink['open']>[0]): void {
    this.#encoder.open(facts);
  }

  events(batch: Parameters<StreamSink['events']>[0]): boolean {
    return this.#encoder.events(batch);
  }

  complete(usage: Parameters<StreamSink['complete']>[0]): void {
    this.#encoder.complete(usage);
  }

  fail(error: Parameters<StreamSink['fail']>[0]): void {
    this.#encoder.fail(error);
  }

  end(): void {
    this.#encoder.end();
  }

  drain(timeoutMs: number): Promise<void> {
    return this.#text.drain(timeoutMs);
  }

  get closed(): boolean {
    return this.#text.closed;
  }

  onClose(listener: () => void): void {
    this.#text.onClose(listener);
  }
}

/** `encoder` over `text` as one StreamSink (see DoorSink). */
export function createDoorSink(text: TextSink, encoder: DoorEncoder): StreamSink {
  return new DoorSink(text, encoder);
}
