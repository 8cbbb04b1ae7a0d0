import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ProviderError } from '../core/provider-error.ts';
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

  it('a CR that ends a read takes an LF that starts the next one as its own, and nothing else', () => {
    // CR, then LF in the next read: one line end, so the three lines are one event.
    assert.deepEqual(scan('data: a\r', '\ndata: b\r', 'data: c\n\n').events, ['a\nb\nc']);
    // Only the first LF after such a CR: a later read that starts with LF ends its line (or event) as usual.
    assert.deepEqual(scan('data: a\r', '\ndata: b\n', '\ndata: c\n\n').events, ['a\nb', 'c']);
    // A CR inside a read (CR then more text) has no bearing on the next read's first LF.
    assert.deepEqual(scan('data: a\rdata: b\n', '\ndata: c\n\n').events, ['a\nb', 'c']);
  });

  it('takes CRLF between the data lines of an event as one line end', () => {
    assert.deepEqual(scan('data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n').events, ['a\nb', 'c']);
  });

  it('keeps the unfinished last line of a read that has CR line ends', () => {
    assert.deepEqual(scan('data: 1\r\n\r\ndata: par', 'tial\r\n\r\n'), {
      events: ['1', 'partial'],
      perRead: [1, 1],
    });
  });

  it('takes "data" without a colon, or with nothing after it, as an empty data line', () => {
    assert.deepEqual(scan('data\n\n', 'data:\n\n', 'data\ndata: x\n\n').events, ['', '', '\nx']);
  });

  it('a blank line with no data before it dispatches nothing', () => {
    assert.deepEqual(scan('\n\ndata: 1\n\n\n\n', ': ping\n\n', '\r\n\r\n').events, ['1']);
  });

  it('takes a "data" line without a colon as data wherever it is in a read', () => {
    assert.deepEqual(scan('data: 1\n\ndata\n\n').events, ['1', '']);
  });

  it('takes only the field named exactly "data" as data', () => {
    assert.deepEqual(scan('dat: 0\ndate: 1\ndataplus: 2\nDATA: 3\ndata: 4\n\n').events, ['4']);
  });

  it('gives nothing for a stream cut inside a line that is not data', () => {
    assert.deepEqual(scan('data: 1\n\n: keep-al').events, ['1']);
    assert.deepEqual(scan('data: 1\n\nevent: x').events, ['1']);
    assert.deepEqual(scan('data: 1\n\ndat').events, ['1']);
  });

  it('bounds the event being read (its data lines and its unfinished line) at exactly 16 MiB', () => {
    const MiB = 1024 * 1024;
    const scanner = new SseByteScanner();
    const sizes: number[] = [];
    const onEvent = (data: Buffer): boolean => {
      sizes.push(data.length);
      return true;
    };
    const data = (bytes: number, fill: number, after: string): Buffer =>
      Buffer.concat([Buffer.from('data: '), Buffer.alloc(bytes, fill), Buffer.from(after)]);
    // A whole event of 9 MiB: handed over, and not counted toward the next one.
    scanner.push(data(9 * MiB, 0x61, '\n\n'), onEvent);
    // The next: a data line of 8 MiB, then an unfinished line that brings the event to exactly 16 MiB.
    scanner.push(data(8 * MiB, 0x62, '\ndata: '), onEvent);
    scanner.push(Buffer.alloc(8 * MiB - 'data: '.length, 0x63), onEvent);
    assert.deepEqual(sizes, [9 * MiB]);
    // One byte more is over.
    assert.throws(
      () => scanner.push(Buffer.from('c'), onEvent),
      (error: unknown) =>
        error instanceof ProviderError && error.failure === 'protocol' && /16 MiB/.test(error.message),
    );
  });

  it('refuses an event over 16 MiB even when every read ends at the end of a line', () => {
    const MiB = 1024 * 1024;
    const scanner = new SseByteScanner();
    const line = (bytes: number): Buffer =>
      Buffer.concat([Buffer.from('data: '), Buffer.alloc(bytes, 0x61), Buffer.from('\n')]);
    scanner.push(line(9 * MiB), () => true);
    assert.throws(
      () => scanner.push(line(8 * MiB), () => true),
      (error: unknown) => error instanceof ProviderError && error.failure === 'protocol',
    );
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
