import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ProviderError } from '../core/provider-error.ts';
import { parseSse, type SseEvent } from './sse.ts';

async function events(...pieces: (string | Buffer)[]): Promise<SseEvent[]> {
  async function* source() {
    yield* pieces;
  }
  const out: SseEvent[] = [];
  for await (const event of parseSse(source())) out.push(event);
  return out;
}

describe('parseSse (WHATWG event-stream rules)', () => {
  it('dispatches one event per blank line, data after "data: "', async () => {
    assert.deepEqual(await events('data: {"a":1}\n\ndata: [DONE]\n\n'), [
      { event: undefined, data: '{"a":1}' },
      { event: undefined, data: '[DONE]' },
    ]);
  });

  it('joins several data lines with a newline and names the event', async () => {
    assert.deepEqual(await events('event: message_delta\ndata: one\ndata: two\n\n'), [
      { event: 'message_delta', data: 'one\ntwo' },
    ]);
  });

  it('forgets the event name after dispatch', async () => {
    assert.deepEqual(await events('event: ping\ndata: 1\n\ndata: 2\n\n'), [
      { event: 'ping', data: '1' },
      { event: undefined, data: '2' },
    ]);
  });

  it('accepts CRLF, CR and LF line ends, even split between pieces', async () => {
    assert.deepEqual(await events('data: a\r\n\r\ndata: b\r\rdata: c\n\n'), [
      { event: undefined, data: 'a' },
      { event: undefined, data: 'b' },
      { event: undefined, data: 'c' },
    ]);
    assert.deepEqual(await events('data: a\r', '\n\r\n'), [{ event: undefined, data: 'a' }]);
    // A CR that ends a piece and the LF that starts the next are one line end: both lines are in one event.
    assert.deepEqual(await events('data: a\r', '\ndata: b\n\n'), [{ event: undefined, data: 'a\nb' }]);
    // CRLF is one line end, not two: the lines stay in one event.
    assert.deepEqual(await events('data: a\r\ndata: b\r\n\r\n'), [{ event: undefined, data: 'a\nb' }]);
    assert.deepEqual(await events('data: a\rdata: b\r\r'), [{ event: undefined, data: 'a\nb' }]);
  });

  it('reassembles lines and multi-byte characters split across pieces', async () => {
    const bytes = Buffer.from('data: héllo €\n\n');
    const cut = bytes.indexOf(0xe2) + 1; // inside the euro sign
    assert.deepEqual(await events(bytes.subarray(0, 3), bytes.subarray(3, cut), bytes.subarray(cut)), [
      { event: undefined, data: 'héllo €' },
    ]);
  });

  it('skips comments, ignores unknown fields and removes only one leading space', async () => {
    assert.deepEqual(await events(': keep-alive\nid: 7\nretry: 10\ndata:  two spaces\ndata:none\n\n'), [
      { event: undefined, data: ' two spaces\nnone' },
    ]);
  });

  it('a field name without a colon has an empty value; a blank line with no data dispatches nothing', async () => {
    assert.deepEqual(await events('data\n\n\n\nevent: x\n\n'), [{ event: undefined, data: '' }]);
    assert.deepEqual(await events('data:\n\n'), [{ event: undefined, data: '' }]);
    assert.deepEqual(await events('data: a:\n\n'), [{ event: undefined, data: 'a:' }]);
  });

  it('dispatches a last event that lacks its blank line at the end of the stream', async () => {
    assert.deepEqual(await events('data: a\n\ndata: tail\n'), [
      { event: undefined, data: 'a' },
      { event: undefined, data: 'tail' },
    ]);
    // A stream cut inside its last line still gives that line's data: the caller judges it (a JSON chunk cut
    // short fails to parse there, and a stream without its terminal event is an error either way).
    assert.deepEqual(await events('data: a\n\ndata: partial'), [
      { event: undefined, data: 'a' },
      { event: undefined, data: 'partial' },
    ]);
    assert.deepEqual(await events('event: e\ndata: x\ndata: y\n'), [{ event: 'e', data: 'x\ny' }]);
    // A cut data line without the space after its colon, and a stream that ends on a CR.
    assert.deepEqual(await events('data: a\n\ndata:tail'), [
      { event: undefined, data: 'a' },
      { event: undefined, data: 'tail' },
    ]);
    assert.deepEqual(await events('data: a\r'), [{ event: undefined, data: 'a' }]);
    // A stream cut inside a line that is not data gives nothing more.
    assert.deepEqual(await events('data: a\n\n: keep-al'), [{ event: undefined, data: 'a' }]);
    assert.deepEqual(await events('data: a\n\nevent: x'), [{ event: undefined, data: 'a' }]);
  });

  it('bounds the event being read (its data and its unfinished line) at exactly 16 MiB', async () => {
    const MiB = 1024 * 1024;
    // A whole event of 9 MiB, not counted toward the next; then 8 MiB of data and an unfinished line that brings
    // the next event to exactly 16 MiB: accepted. One character more is a protocol error.
    const pieces = [
      `data: ${'a'.repeat(9 * MiB)}\n\n`,
      `data: ${'b'.repeat(8 * MiB)}\ndata: `,
      'c'.repeat(8 * MiB - 'data: '.length),
    ];
    const sizes = (await events(...pieces)).map((event) => event.data.length);
    assert.deepEqual(sizes, [9 * MiB, 16 * MiB - 'data: '.length + 1]);
    await assert.rejects(
      events(...pieces, 'c'),
      (error: unknown) =>
        error instanceof ProviderError && error.failure === 'protocol' && /16 MiB/.test(error.message),
    );
  });
});
