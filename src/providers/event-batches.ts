import type { EventBatch } from '../core/stream-event.ts';
import { SseByteScanner } from './sse.ts';
import { releaseBody, toProviderError, type UpstreamResponse } from './upstream-http.ts';

/** One upstream protocol's reading of its stream's events into canonical events (stream-event.ts). */
export interface EventDecoder {
  /**
   * One event's data (its `data:` lines, as bytes) into `out`; true when it was the stream's terminal event.
   * Throws a ProviderError for an event that is not the protocol's (or the upstream's in-band error).
   */
  event(data: Buffer, out: EventBatch): boolean;
  /** The body ended with no terminal event: its last events into `out`, or a `protocol` ProviderError. */
  end(out: EventBatch): void;
}

/**
 * The shared upstream SSE loop of the canonical path: each read of the body is scanned for events in bytes
 * (SseByteScanner), decoded, and what it completed is yielded as one batch, so there is one async step per read
 * rather than per event. Events decoded before a failure are yielded first, then the failure is thrown (as a
 * ProviderError). The body is released however the loop ends: read off after the terminal event (the connection
 * is reused), destroyed when left mid-way.
 */
export async function* readEventBatches(
  response: UpstreamResponse,
  signal: AbortSignal,
  decoder: EventDecoder,
): AsyncGenerator<EventBatch> {
  const scanner = new SseByteScanner();
  let batch: EventBatch = [];
  let finished = false;
  let failure: Error | undefined;
  const onEvent = (data: Buffer): boolean => {
    try {
      finished = decoder.event(data, batch);
    } catch (error) {
      failure = toProviderError(error, signal);
      return false;
    }
    return !finished;
  };
  try {
    for await (const read of response.body.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      scanner.push(read, onEvent);
      if (batch.length > 0) {
        const ready = batch;
        batch = [];
        yield ready;
      }
      if (failure !== undefined) throw failure;
      if (finished) return;
    }
    scanner.finish(onEvent);
    if (failure === undefined && !finished) {
      try {
        decoder.end(batch);
      } catch (error) {
        failure = toProviderError(error, signal);
      }
    }
    if (batch.length > 0) yield batch;
    if (failure !== undefined) throw failure;
  } catch (error) {
    throw toProviderError(error, signal);
  } finally {
    releaseBody(response.body, finished);
  }
}
