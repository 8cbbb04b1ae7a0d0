import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { createOutput } from './output.ts';

/** What a terminal would act on: ESC, BEL, the one-character CSI, a bidi override. */
// eslint-disable-next-line no-control-regex -- looking for control characters is the point
const RAW_CONTROLS = /[\u001b\u0007\u009b\u202e]/;
const HOSTILE_NAME = '\u001b]0;owned\u0007ci\u001b[2J\u001b[1A\u009b31mkey';
const HOSTILE_EMAIL = 'eve\u202egnp.example.com';

function capture(json: boolean): { out: ReturnType<typeof createOutput>; text: () => string } {
  let text = '';
  const stdout = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  }) as unknown as NodeJS.WriteStream;
  return { out: createOutput({ json, stdout }), text: () => text };
}

describe('the CLI never prints terminal controls a tenant wrote', () => {
  it('tables, fields, results and lines show them as visible escapes', () => {
    const { out, text } = capture(false);
    out.list({ data: [{ id: 'key_1', name: HOSTILE_NAME }] }, ['ID', 'NAME'], (k) => [k['id'], k['name']]);
    out.printFields([
      ['email', HOSTILE_EMAIL],
      ['allowed', [HOSTILE_NAME]],
    ]);
    out.result({}, `revoked key ${HOSTILE_NAME}`);
    out.line(`${out.style('dim', 'page')} ${HOSTILE_NAME}`);
    const printed = text();
    assert.doesNotMatch(printed, RAW_CONTROLS);
    assert.ok(printed.includes('\\x1b]0;owned\\x07ci\\x1b[2J'), printed);
    assert.ok(printed.includes('\\x9b31mkey'), printed);
    assert.ok(printed.includes('eve\\u202egnp.example.com'), printed);
  });

  it('--json output stays valid JSON that reads back the same strings, with no raw controls', () => {
    const { out, text } = capture(true);
    const answer = { data: [{ name: HOSTILE_NAME, email: HOSTILE_EMAIL }] };
    out.list(answer, ['NAME'], (k) => [k['name']]);
    assert.doesNotMatch(text(), RAW_CONTROLS);
    assert.deepEqual(JSON.parse(text()), answer);
  });
});
