import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ProviderError } from './provider.ts';
import { SseByteScanner } from './sse.ts';

/** Scans `reads` in order; the events' data as text, and the events each read completed. */
function scan(...reads: (string | Buffer)[]): { events: string[]; perRead: number[] } {
  const scanner = new SseByteScanner();
  const events: string[] = [];
  const perRead: number[] = [];
  for (const read of reads) {
    const before = events.length;
    scanner.push(Buffer.isBuffer(read) ? read : Buffer.from(read), (data) => {
      events.push(data.toString());
      return true;
    });
    perRead.push(events.length - before);
  }
  scanner.finish((data) => {
    events.push(data.toString());
    return true;
  });
  return { events, perRead };
}

describe('SseByteScanner (the pass-through path)', () => {
  it('hands over each event of a read, in order', () => {
    assert.deepEqual(scan('data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n'), {
      events: ['{"a":1}', '{"b":2}', '[DONE]'],
      perRead: [3],
    });
  });

  it('keeps an event split between reads until its blank line, and gives it whole', () => {
    assert.deepEqual(scan('data: {"a"', ':1}\n', '\ndata: 2\n\n'), {
      events: ['{"a":1}', '2'],
      perRead: [0, 0, 2],
    });
  });

  it('accepts CRLF, CR and LF line ends, with a CRLF split between reads', () => {
    assert.deepEqual(scan('data: a\r\n\r', '\ndata: b\r\r', 'data: c\n\ndata: d\r', '\n\r\n').events, [
      'a',
      'b',
      'c',
      'd',
    ]);
  });

  it('joins data lines with LF, skips comments, event:, id: and retry: lines', () => {
    assert.deepEqual(scan(': ping\nevent: x\nid: 7\nretry: 10\ndata: one\ndata:two\n\n').events, [
      'one\ntwo',
    ]);
  });

  it('gives a multi-byte character split between reads whole', () => {
    const bytes = Buffer.from('data: {"c":"é€😀"}\n\n');
    const { events } = scan(bytes.subarray(0, 15), bytes.subarray(15, 17), bytes.subarray(17));
    assert.deepEqual(events, ['{"c":"é€😀"}']);
  });

  it('gives the last event of a stream cut before its blank line', () => {
    assert.deepEqual(scan('data: 1\n\ndata: [DONE]').events, ['1', '[DONE]']);
  });

  it('stops when the receiver says so', () => {
    const scanner = new SseByteScanner();
    const seen: string[] = [];
    scanner.push(Buffer.from('data: 1\n\ndata: 2\n\ndata: 3\n\n'), (data) => {
      seen.push(data.toString());
      return seen.length < 2;
    });
    assert.deepEqual(seen, ['1', '2']);
  });

  it('refuses an event over 16 MiB as a protocol error', () => {
    const scanner = new SseByteScanner();
    const big = Buffer.alloc(1024 * 1024, 0x61);
    assert.throws(
      () => {
        scanner.push(Buffer.from('data: '), () => true);
        for (let i = 0; i < 17; i++) scanner.push(big, () => true);
      },
      (error: unknown) => error instanceof ProviderError && error.failure === 'protocol',
    );
  });
});
