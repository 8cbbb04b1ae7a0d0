import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DoorEncoder } from './door-sink.ts';
import { createDoorSink } from './door-sink.ts';
import { recordingSink } from '../gateway/testing.ts';

const encoder = (calls: string[]): DoorEncoder => ({
  open: () => void calls.push('open'),
  events: () => (calls.push('events'), true),
  complete: () => void calls.push('complete'),
  fail: () => void calls.push('fail'),
  end: () => void calls.push('end'),
});

describe('a front door sink over its text sink', () => {
  it('reads closed from the text sink each time, so a client that leaves mid-stream is seen', () => {
    const client = { gone: false };
    const text = {
      ...recordingSink(),
      get closed() {
        return client.gone;
      },
    };
    const sink = createDoorSink(text, encoder([]));
    assert.equal(sink.closed, false);
    client.gone = true;
    assert.equal(sink.closed, true);
  });

  it('hands open, events, complete, fail and end to the encoder, in order', () => {
    const calls: string[] = [];
    const sink = createDoorSink(recordingSink(), encoder(calls));
    sink.open({ rateLimits: {}, overheadMs: 0, costMicros: undefined });
    assert.equal(sink.events([]), true);
    sink.complete({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 });
    sink.fail({} as never);
    sink.end();
    assert.deepEqual(calls, ['open', 'events', 'complete', 'fail', 'end']);
  });

  it('offers passThrough only when the encoder has one', () => {
    assert.equal(typeof createDoorSink(recordingSink(), encoder([])).passThrough, 'undefined');
    let seen = '';
    const sink = createDoorSink(recordingSink(), {
      ...encoder([]),
      passThrough: (_batch, model) => ((seen = model), false),
    });
    assert.equal(sink.passThrough?.([], 'model-b'), false);
    assert.equal(seen, 'model-b');
  });

  it('gives drain and close listeners to the text sink', async () => {
    let listener: (() => void) | undefined;
    let drained = 0;
    const text = {
      ...recordingSink(),
      drain: (timeoutMs: number) => ((drained = timeoutMs), Promise.resolve()),
      onClose: (l: () => void) => void (listener = l),
    };
    const sink = createDoorSink(text, encoder([]));
    await sink.drain(250);
    assert.equal(drained, 250);
    let closed = false;
    sink.onClose(() => (closed = true));
    listener?.();
    assert.equal(closed, true);
  });
});
