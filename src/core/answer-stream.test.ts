import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openEvents, openFastest } from './answer-stream.ts';
import type { OpenedStream, PassThroughStream, Provider, ProviderCall } from './provider.ts';
import { ProviderError } from './provider-error.ts';
import type { EventBatch } from './stream-event.ts';
import { chatRequestOf } from './testing.ts';

const text = (t: string): EventBatch => [{ type: 'text', text: t }];

/** A provider whose stream yields `reads` (an Error: it fails there), counting return() calls. */
function provider(reads: (EventBatch | Error)[], fast?: PassThroughStream) {
  const seen = { returns: 0, nexts: 0 };
  const p = {
    id: 'p',
    stream: () => ({
      [Symbol.asyncIterator]: (): AsyncIterator<EventBatch> => {
        let index = 0;
        return {
          next: async () => {
            seen.nexts++;
            const read = reads[index++];
            if (read === undefined) return { done: true, value: undefined };
            if (read instanceof Error) throw read;
            return { done: false, value: read };
          },
          return: async () => {
            seen.returns++;
            return { done: true, value: undefined };
          },
        };
      },
    }),
    ...(fast === undefined ? {} : { passThrough: async () => fast }),
    complete: () => Promise.reject(new Error('not used')),
    close: async () => {},
  } as unknown as Provider;
  return { p, seen };
}

const call: ProviderCall = {
  request: chatRequestOf(),
  upstreamModel: 'm',
  signal: new AbortController().signal,
  defaultMaxTokens: 16,
};

/** Takes the rest of `stream`, pausing after the batches whose index is in `pauseAt`. */
function take(stream: OpenedStream<EventBatch>, pauseAt: number[] = []) {
  const got: string[] = [];
  let index = 0;
  const ended = new Promise<unknown>((resolve) =>
    stream.start({
      batch(batch) {
        for (const event of batch) if (event.type === 'text') got.push(event.text);
        return !pauseAt.includes(index++);
      },
      end: resolve,
    }),
  );
  return { got, ended };
}

describe('the canonical lane as an opened stream', () => {
  it('opens with the first read and pushes the rest, then ends without failure', async () => {
    const { p, seen } = provider([text('a'), text('b'), text('c')]);
    const opened = await openEvents(p, call);
    assert.equal(opened.lane, 'events');
    assert.deepEqual(opened.stream.first, text('a'));
    const { got, ended } = take(opened.stream);
    assert.equal(await ended, undefined);
    assert.deepEqual(got, ['b', 'c']);
    assert.equal(seen.returns, 0);
  });

  it('an empty stream is a protocol failure at the opening (the router retries it)', async () => {
    const { p } = provider([]);
    await assert.rejects(openEvents(p, call), (error: unknown) => {
      assert.ok(error instanceof ProviderError);
      assert.equal(error.failure, 'protocol');
      return true;
    });
  });

  it('reads no further while paused, and goes on at resume', async () => {
    const { p, seen } = provider([text('a'), text('b'), text('c')]);
    const { stream } = await openEvents(p, call);
    const { got, ended } = take(stream, [0]);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(got, ['b']);
    assert.equal(seen.nexts, 2, 'the read after the pause waits for resume');
    stream.resume();
    assert.equal(await ended, undefined);
    assert.deepEqual(got, ['b', 'c']);
  });

  it('a failure mid-way ends it with that failure', async () => {
    const broken = new ProviderError('protocol', 'bad event');
    const { p } = provider([text('a'), text('b'), broken, text('never')]);
    const { stream } = await openEvents(p, call);
    const { got, ended } = take(stream);
    assert.equal(await ended, broken);
    assert.deepEqual(got, ['b']);
  });

  it('stop lets go of the upstream once, and ends a paused stream', async () => {
    const { p, seen } = provider([text('a'), text('b'), text('c')]);
    const { stream } = await openEvents(p, call);
    const { got, ended } = take(stream, [0]);
    await new Promise((resolve) => setImmediate(resolve));
    stream.stop();
    stream.stop();
    assert.equal(await ended, undefined);
    assert.deepEqual(got, ['b']);
    assert.equal(seen.returns, 1);
  });
});

describe('openFastest', () => {
  it('takes the fast lane where the provider offers it, the canonical events elsewhere', async () => {
    const fast: PassThroughStream = { first: [], start() {}, resume() {}, stop() {} };
    assert.equal((await openFastest(provider([text('a')], fast).p, call)).lane, 'chunks');
    assert.equal((await openFastest(provider([text('a')]).p, call)).lane, 'events');
  });
});
