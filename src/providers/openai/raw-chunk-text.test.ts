import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { scanChunk } from './scan-chunk.ts';
import { RawText } from '../../core/raw-chunk.ts';

const raw = (choices: unknown[]) =>
  scanChunk(Buffer.from(JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'm', choices })))!;
const content = (text: unknown) => raw([{ index: 0, delta: { content: text } }]);

describe('RawText (raw chunks’ content kept as bytes until it is needed)', () => {
  it('decodes what was added, in order, as the chunks’ own text', () => {
    const text = new RawText();
    const pieces = ['Hello', ', ', 'wörld 😀', '', 'a "quoted"\\ line\n', 'x'.repeat(300), ' end'];
    for (const piece of pieces) text.add(content(piece));
    text.add(content(null));
    text.add(raw([{ index: 0, delta: {} }]));
    assert.equal(text.take(), pieces.join(''));
    assert.equal(text.take(), '');
  });

  it('joins a surrogate pair sent as two escapes in two chunks, as strings joined would', () => {
    const text = new RawText();
    text.add(content('\ud83d'));
    text.add(content('\ude00!'));
    assert.equal(text.take(), '😀!');
  });

  it('keeps the order with chunks of several choices (decoded by the scan)', () => {
    const text = new RawText();
    text.add(content('a'));
    const several = raw([
      { index: 0, delta: { content: 'b' } },
      { index: 1, delta: { content: 'c\n' } },
    ]);
    assert.equal(several.textStart, -2);
    text.add(several);
    text.add(content('d'));
    assert.equal(text.take(), 'abc\nd');
  });

  it('gives a raw chunk’s text when asked', () => {
    assert.equal(content('é\t"').text, 'é\t"');
    assert.equal(content(null).text, '');
  });
});
