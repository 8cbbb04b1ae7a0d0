import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countJsonValues } from './count-json-values.ts';

const count = (text: string, limit = Infinity): number => countJsonValues([Buffer.from(text)], limit);

describe('countJsonValues', () => {
  it('counts objects, arrays and the items after commas', () => {
    assert.equal(count('{"a":1,"b":[1,2,3]}'), 5);
    assert.equal(count('[]'), 1);
    assert.equal(count('"just a string"'), 0);
  });

  it('ignores commas, braces and brackets inside strings, escaped quotes included', () => {
    assert.equal(count('{"a":"x,{[y","b":"q\\",[,"}'), 2);
    assert.equal(count('["\\\\",1]'), 2, 'an escaped backslash ends before the closing quote');
  });

  it('keeps its place across chunks, a backslash at a chunk end included', () => {
    const text = '{"a":"x\\",y","b":[1,2]}';
    const whole = count(text);
    for (let cut = 1; cut < text.length; cut++) {
      const chunks = [Buffer.from(text.slice(0, cut)), Buffer.from(text.slice(cut))];
      assert.equal(countJsonValues(chunks, Infinity), whole, `cut at ${cut}`);
    }
  });

  it('stops once past the limit', () => {
    assert.equal(count('[1,1,1,1,1,1,1,1,1,1]', 3), 4);
  });
});
