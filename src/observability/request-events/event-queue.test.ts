import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { EventQueue } from './event-queue.ts';
import { createRequestEvents } from './request-events.ts';
import type { Settlement } from '../../core/records.ts';

const quiet = { batchSize: 2, maxQueue: 3, intervalMs: 5, maxAttempts: 3, retryDelayMs: () => 1 };

describe('request events queue', () => {
  it('a full queue drops its oldest events and counts them; the newest are sent', async () => {
    const sent: string[][] = [];
    const drops: [number, string][] = [];
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const queue = new EventQueue({
      ...quiet,
      send: async (lines) => {
        await gate;
        sent.push([...lines]);
        return 'sent';
      },
      onDropped: (count, reason) => void drops.push([count, reason]),
    });
    // The first two go out as a batch (held at the gate); then five more against a queue of three.
    for (const line of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) queue.add(line);
    assert.equal(queue.length, 3);
    assert.deepEqual(drops, [
      [1, 'queue_full'],
      [1, 'queue_full'],
    ]);
    open();
    await queue.close();
    assert.deepEqual(sent, [['a', 'b'], ['e', 'f'], ['g']]);
  });

  it('a failed batch is retried, and dropped (counted) after its last attempt; a 4xx drops it at once', async () => {
    const outcomes: ('sent' | 'retry' | 'rejected')[] = [
      'retry',
      'sent',
      'retry',
      'retry',
      'retry',
      'rejected',
    ];
    const calls: string[][] = [];
    const drops: [number, string][] = [];
    const queue = new EventQueue({
      ...quiet,
      send: async (lines) => {
        calls.push([...lines]);
        return outcomes.shift()!;
      },
      onDropped: (count, reason) => void drops.push([count, reason]),
    });
    queue.add('a');
    queue.add('b');
    await new Promise((resolve) => setTimeout(resolve, 30));
    queue.add('c');
    queue.add('d');
    await new Promise((resolve) => setTimeout(resolve, 30));
    queue.add('e');
    await queue.close();
    assert.deepEqual(calls, [['a', 'b'], ['a', 'b'], ['c', 'd'], ['c', 'd'], ['c', 'd'], ['e']]);
    assert.deepEqual(drops, [
      [2, 'send_failed'],
      [1, 'send_failed'],
    ]);
  });

  it('stdout: one JSON line per finished request, the usage record’s fields and nothing else', async () => {
    const out = new PassThrough();
    let written = '';
    out.on('data', (piece: Buffer) => (written += piece.toString()));
    const events = createRequestEvents(
      { TOLLGATE_REQUEST_EVENTS: 'stdout', TOLLGATE_REQUEST_EVENTS_INTERVAL_MS: '5' },
      new Registry(),
      pino({ level: 'silent' }),
      { stdout: out },
    )!;
    const settlement: Settlement = {
      requestId: 'req_1',
      accountId: 'acct_1',
      keyId: 'key_1',
      model: 'model-a',
      deployment: 'up/a',
      promptTokens: 10,
      completionTokens: 5,
      estimated: false,
      costMicros: 1234,
      status: 'ok',
      latencyMs: 12.3456,
      ttftMs: null,
      createdAt: Date.UTC(2026, 0, 2),
    };
    events.record(settlement);
    events.record({ ...settlement, requestId: 'req_2', status: 'error' });
    await events.close();
    const lines = written
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.deepEqual(lines[0], {
      type: 'request.finished',
      request_id: 'req_1',
      account_id: 'acct_1',
      key_id: 'key_1',
      model: 'model-a',
      deployment: 'up/a',
      status: 'ok',
      prompt_tokens: 10,
      completion_tokens: 5,
      total_tokens: 15,
      estimated: false,
      cost_micros: 1234,
      latency_ms: 12.346,
      ttft_ms: null,
      created_at: '2026-01-02T00:00:00.000Z',
    });
    assert.equal(lines[1]!['request_id'], 'req_2');
  });

  it('is off unless TOLLGATE_REQUEST_EVENTS names stdout or an http(s) URL', () => {
    const make = (value: string | undefined) =>
      createRequestEvents({ TOLLGATE_REQUEST_EVENTS: value }, new Registry(), pino({ level: 'silent' }));
    assert.equal(make(undefined), undefined);
    assert.equal(make(''), undefined);
    assert.throws(() => make('ftp://example.com'), /TOLLGATE_REQUEST_EVENTS/);
  });
});
