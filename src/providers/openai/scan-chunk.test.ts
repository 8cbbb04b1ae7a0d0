import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { describe, it } from 'node:test';
import { RawChunk } from '../../core/raw-chunk.ts';
import { ChunkScanner, scanChunk } from './scan-chunk.ts';

const scan = (text: string | Buffer): RawChunk | undefined =>
  scanChunk(Buffer.isBuffer(text) ? text : Buffer.from(text));

const chunk = (fields: Record<string, unknown>): string =>
  JSON.stringify({
    id: 'c1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'up-model',
    choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: null }],
    ...fields,
  });

/** The model value the scan located, as text. */
const modelOf = (raw: RawChunk): string => raw.bytes.toString('utf8', raw.modelStart, raw.modelEnd);

describe('scanChunk (the fast path reads a chunk without parsing it)', () => {
  it('locates the top-level model and meters the delta content', () => {
    const raw = scan(chunk({}))!;
    assert.ok(raw instanceof RawChunk);
    assert.equal(modelOf(raw), '"up-model"');
    assert.equal(raw.text, 'hi');
    assert.deepEqual([raw.usageStart, raw.usageEnd], [-1, -1]);
  });

  it('is not fooled by "model" inside content, nested objects or other strings', () => {
    const text = chunk({
      choices: [{ index: 0, delta: { content: 'the "model":"x" key' }, finish_reason: null }],
      system_fingerprint: '"model":"y"',
      meta: { model: 'nested' },
    });
    const raw = scan(text)!;
    assert.equal(modelOf(raw), '"up-model"');
    assert.equal(raw.text, 'the "model":"x" key');
  });

  it('decodes escapes and multi-byte text in content', () => {
    const raw = scan(chunk({ choices: [{ index: 0, delta: { content: 'a\n"b"\\ é😀\u0001' } }] }))!;
    assert.equal(raw.text, 'a\n"b"\\ é😀\u0001');
  });

  it('locates a top-level "usage": null to cut, wherever it is', () => {
    for (const text of [
      chunk({ usage: null }),
      `{"usage":null,${chunk({}).slice(1)}`,
      `{ "id":"c", "usage" : null , "model":"m","choices":[{"delta":{}}]}`,
    ]) {
      const raw = scan(text)!;
      const cut = Buffer.concat([
        raw.bytes.subarray(0, raw.usageStart),
        raw.bytes.subarray(raw.usageEnd),
      ]).toString();
      const parsed = JSON.parse(cut) as Record<string, unknown>;
      assert.equal('usage' in parsed, false, text);
      assert.deepEqual(parsed, stripUsage(text));
    }
  });

  it('leaves to a parse: usage with counts, errors, tool calls, empty choices, odd types', () => {
    for (const text of [
      chunk({ usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } }),
      chunk({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } }),
      JSON.stringify({ error: { message: 'boom' } }),
      chunk({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0 }] } }] }),
      chunk({ choices: [{ index: 0, delta: { function_call: { name: 'f' } } }] }),
      chunk({ choices: [] }),
      chunk({ model: 7 }),
      chunk({ choices: 'none' }),
      chunk({ choices: [{ index: 0, delta: { content: 5 } }] }),
      '{"id":"c","choices":[{"delta":{}}]}',
      '{"model":"a","model":"b","choices":[{"delta":{}}]}',
      '{"mod\\u0065l":"a","choices":[{"delta":{}}]}',
      '{"model":"a","choices":[{"delta":{"content":"x","content":"y"}}]}',
      '[1,2]',
      '"text"',
    ])
      assert.equal(scan(text), undefined, text);
  });

  it('refuses what is not JSON, however close', () => {
    const good = chunk({});
    for (const text of [
      good.slice(0, -1),
      `${good}}`,
      `${good} x`,
      good.replace('"created":1', '"created":01'),
      good.replace('"created":1', '"created":1.'),
      good.replace('"created":1', '"created":-'),
      good.replace('"created":1', '"created":tru'),
      good.replace('"created":1,', '"created":1,,'),
      good.replace('"hi"', '"h\\xi"'),
      good.replace('"hi"', '"h\\u12"'),
      good.replace('"hi"', '"h\ti"'),
      good.replace('"hi"', "'hi'"),
      '{"model":"a","choices":[{"delta":{}}],}',
      // a value that fails where its object or array would close, which is left open
      '{"model":"a","choices":[{"delta":{}}],"x":{"a":}',
      '{"model":"a","choices":[{"delta":{}}],"x":{"y":{"a":1,}',
      '{"model":"a","choices":[{"delta":{}}],"x":[[1,]}',
      '{"model":"a","choices":[{"delta":{}}],"x":[{"a":}]',
      '{"model":"a","choices":[{"delta":{}}],"x":{"a":[1,]}',
      '',
      '{',
    ]) {
      assert.equal(scan(text), undefined, text);
      assert.throws(() => JSON.parse(text), text);
    }
  });

  it('refuses invalid UTF-8 (a parse replaces it, as the canonical path does)', () => {
    const bytes = Buffer.from(chunk({}).replace('hi', 'h\u00e9'));
    const at = bytes.indexOf(0xc3);
    bytes[at + 1] = 0x28;
    assert.equal(scan(bytes), undefined);
  });

  it('accepts what JSON accepts: whitespace, numbers, literals, nesting', () => {
    const text = ` { "id" : "c" , "created" : -1.5e+3 , "model" : "m" , "x" : [ true , false , null , { } , [ ] , 0 , 0.25E-2 ] ,
      "choices" : [ { "index" : 0 , "delta" : { "content" : null } , "logprobs" : { "content" : [ { "token" : "a" } ] } } ] } `;
    const raw = scan(text)!;
    assert.equal(modelOf(raw), '"m"');
    assert.equal(raw.text, '');
    // no content string: no span, no escape
    assert.deepEqual([raw.textStart, raw.textEnd, raw.textEscaped], [-1, -1, false]);
  });

  it('passes keys that only look like the ones that matter, and those keys anywhere but where they matter', () => {
    const text = chunk({
      modelx: 'n',
      mode: 'n',
      usages: { total_tokens: 1 },
      usag: 1,
      errors: {},
      erro: 1,
      choices: [
        {
          index: 0,
          deltas: { tool_calls: [] },
          delt: { content: 5 },
          delta: { contents: 5, conten: {}, content: 'hi', tool_call: 1, tool_calls_x: 1, function_calls: 2 },
        },
      ],
      choicesx: 5,
      delta: { tool_calls: [], content: 5 },
      meta: {
        model: 7,
        usage: { total_tokens: 1 },
        error: { message: 'no' },
        choices: [{ delta: { tool_calls: [], content: 5 } }],
        kXy: { modXl: 1 },
      },
      logprobs: [{ delta: { content: 5, function_call: {} } }],
    })
      .replace('"kXy"', '"k\\u0065y"')
      .replace('"modXl"', '"mod\\u0065l"');
    const raw = scan(text)!;
    assert.ok(raw, text);
    assert.equal(modelOf(raw), '"up-model"');
    assert.equal(raw.text, 'hi');
    assert.equal(raw.usageStart, -1);
  });

  it('leaves to a parse: a key that matters twice, choices that are not objects, escaped keys where keys matter', () => {
    for (const text of [
      '{"model":"a","usage":null,"usage":null,"choices":[{"delta":{}}]}',
      '{"model":"a","choices":[{"delta":{}}],"choices":[{"delta":{}}]}',
      '{"model":"a","choices":"x","choices":[{"delta":{}}]}',
      '{"model":"a","choices":[{"delta":{"content":"x"}}],"choices":[{"index":0}]}',
      '{"model":"a","choices":[{"delta":{"content":"x"},"delta":{"content":"y"}}]}',
      // a repeated key in one choice beside a choice without it: counted per choice, not in total
      '{"model":"a","choices":[{"delta":{"content":"x"},"delta":{"content":"y"}},{"index":1}]}',
      '{"model":"a","choices":[{"delta":{"content":"x","content":"y"}},{"delta":{}}]}',
      '{"model":"a","choices":[{"delta":{}},1]}',
      '{"model":"a","choices":[null]}',
      '{"model":"a","choices":["x"]}',
      '{"model":"a","choices":[[]]}',
      '{"model":"a","error":null,"choices":[{"delta":{}}]}',
      '{"model":"a","us\u0061ge":{"total_tokens":1},"choices":[{"delta":{}}]}',
      '{"model":"a","choices":[{"d\u0065lta":{"tool_calls":[]}}]}',
      '{"model":"a","choices":[{"delta":{"cont\u0065nt":5}}]}',
      '{"model":"a","choices":{"0":{"delta":{}}}}',
    ])
      assert.equal(scan(text), undefined, text);
  });

  it('nests up to 32 deep, objects or arrays, and no deeper', () => {
    const head = '{"model":"m","choices":[{"delta":{}}],"x":';
    for (const [open, close] of [
      ['[', ']'],
      ['{"a":', '}'],
    ] as const) {
      const nested = (depth: number): string =>
        `${head}${open.repeat(depth - 1)}1${close.repeat(depth - 1)}}`;
      // the top-level object is the first level
      assert.equal(modelOf(scan(nested(32))!), '"m"');
      assert.equal(scan(nested(33)), undefined);
      JSON.parse(nested(33));
    }
    const deepChoice = `{"model":"m","choices":[{"delta":{"content":"a"},"x":${'['.repeat(28)}${']'.repeat(28)}}]}`;
    assert.equal(scan(deepChoice)!.text, 'a');
    assert.equal(scan(deepChoice.replace('[', '[[').replace(']', ']]')), undefined);
  });

  it('checks each \\u escape for four hex digits, both cases, and refuses a lone byte that is not UTF-8', () => {
    const withContent = (json: string): string => `{"model":"m","choices":[{"delta":{"content":"${json}"}}]}`;
    assert.equal(scan(withContent('\\u0009\\u09AF\\uafAF\\u0f0F'))!.text, '\u0009\u09af\uafaf\u0f0f');
    for (const bad of ['/', ':', '@', 'G', '`', 'g', '"'])
      for (const at of [0, 1, 2, 3]) {
        const hex = `${'0'.repeat(at)}${bad}${'0'.repeat(3 - at)}`;
        assert.equal(scan(withContent(`\\u${hex}`)), undefined, hex);
      }
    assert.equal(scan(withContent('\\u00')), undefined);
    for (const lone of [0x80, 0xbf, 0xc3, 0xff]) {
      const bytes = Buffer.from(withContent('a_b'));
      bytes[bytes.indexOf('_')] = lone;
      assert.equal(scan(bytes), undefined, String(lone));
    }
  });

  it('reads every escape JSON has, and refuses every other', () => {
    const withContent = (json: string): string => `{"model":"m","choices":[{"delta":{"content":"${json}"}}]}`;
    const all = '\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041';
    assert.equal(scan(withContent(all))!.text, '"\\/\b\f\n\r\tA');
    for (let c = 0x20; c < 0x7f; c++) {
      const text = withContent(`a\\${String.fromCharCode(c)}0000`);
      const json = (() => {
        try {
          return JSON.parse(text) as unknown;
        } catch {
          return undefined;
        }
      })();
      assert.equal(scan(text) !== undefined, json !== undefined, text);
    }
  });

  it('reads numbers as JSON does', () => {
    const withCreated = (number: string): string =>
      `{"created":${number},"model":"m","choices":[{"index":${number},"delta":{}}]}`;
    for (const number of [
      '0',
      '-0',
      '9',
      '10',
      '1234567890',
      '0.5',
      '0.09',
      '9.0',
      '1e9',
      '1E+9',
      '1e-09',
      '-9.9e9',
    ])
      assert.equal(modelOf(scan(withCreated(number))!), '"m"', number);
    for (const number of [
      '01',
      '-',
      '1.',
      '.5',
      '1e',
      '1e+',
      '+1',
      '1/',
      '1:',
      '0x1',
      '-a',
      '9:',
      '1.:',
      '1e:',
      '1e/',
      '/',
    ])
      assert.equal(scan(withCreated(number)), undefined, number);
  });

  it('passes a chunk wide but shallow: many objects and arrays side by side', () => {
    const text = chunk({
      x: Array.from({ length: 40 }, () => ({ a: [[], {}] })),
      y: Array.from({ length: 40 }, () => []),
    });
    assert.equal(modelOf(scan(text)!), '"up-model"');
  });

  it('meters every choice', () => {
    const raw = scan(
      chunk({
        choices: [
          { index: 0, delta: { content: 'a' } },
          { index: 1, delta: { content: 'b' } },
        ],
      }),
    )!;
    assert.equal(raw.text, 'ab');
  });

  it('meters every choice: escaped or not, null or absent content, in order', () => {
    const raw = scan(
      chunk({
        choices: [
          { index: 0, delta: { content: 'a\n' } },
          { index: 1, delta: { content: null } },
          { index: 2, delta: { role: 'assistant' } },
          { index: 3, delta: { content: 'b' } },
          { index: 4 },
          { index: 5, delta: { content: '"c"' } },
          { index: 6, delta: { content: '' } },
        ],
      }),
    )!;
    assert.equal(raw.text, 'a\nb"c"');
    // strings of nothing but escapes
    const slashes = chunk({ choices: [{ delta: { content: '\\' } }, { delta: { content: '\\\\' } }] });
    assert.equal(scan(slashes)!.text, '\\\\\\');
    assert.equal(
      scan(chunk({ choices: [{ delta: { content: 'x' } }, { delta: { content: 'y\\' } }] }))!.text,
      'xy\\',
    );
  });
});

function stripUsage(text: string): unknown {
  const parsed = JSON.parse(text) as Record<string, unknown>;
  delete parsed['usage'];
  return parsed;
}

describe('ChunkScanner (a stream’s chunks checked against the last fully scanned one)', () => {
  /** What a scan found, comparable: undefined, or the located spans and the text. */
  const found = (raw: RawChunk | undefined): unknown =>
    raw && {
      model: [raw.modelStart, raw.modelEnd],
      usage: [raw.usageStart, raw.usageEnd],
      content: [raw.textStart, raw.textEnd, raw.textEscaped],
      text: raw.text,
    };
  /** Each chunk through one ChunkScanner, in order, decides as the full scan does. */
  const agrees = (chunks: (string | Buffer)[]): void => {
    const scanner = new ChunkScanner();
    for (const text of chunks) {
      const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text);
      assert.deepEqual(found(scanner.scan(bytes)), found(scanChunk(bytes)), bytes.toString());
    }
  };
  const content = (value: unknown, extra: Record<string, unknown> = {}): string =>
    chunk({
      choices: [{ index: 0, delta: { content: value }, logprobs: null, finish_reason: null }],
      ...extra,
    });

  it('reads the chunks after the first as the full scan does: other content, escapes, multi-byte text', () => {
    agrees([
      content(''),
      content('hello'),
      content(' a much longer piece of content than the first'),
      content('a\n"b"\\ é😀\u0001'),
      content('\ud83d'),
      content('x', { id: 'other-id' }),
      content('y'),
    ]);
  });

  it('locates model, usage and content when strings before them change length', () => {
    const scanner = new ChunkScanner();
    scanner.scan(Buffer.from(content('a', { usage: null, id: 'short' })));
    const next = Buffer.from(content('bcd', { usage: null, id: 'a-much-longer-id' }));
    const raw = scanner.scan(next)!;
    assert.equal(modelOf(raw), '"up-model"');
    assert.equal(raw.text, 'bcd');
    const cut = Buffer.concat([raw.bytes.subarray(0, raw.usageStart), raw.bytes.subarray(raw.usageEnd)]);
    assert.deepEqual(JSON.parse(cut.toString()), stripUsage(next.toString()));
    // usage ahead of the strings that change
    scanner.scan(Buffer.from(`{"usage":null,${content('a', { id: 'x' }).slice(1)}`));
    const ahead = scanner.scan(Buffer.from(`{"usage":null,${content('long text', { id: 'xyz' }).slice(1)}`))!;
    assert.deepEqual([ahead.usageStart, ahead.usageEnd], [1, 14]);
    assert.equal(ahead.text, 'long text');
  });

  it('falls back to the full scan for another shape, and for what is not JSON or not UTF-8', () => {
    const first = content('a');
    const broken = Buffer.from(content('h\u00e9'));
    broken[broken.indexOf(0xc3) + 1] = 0x28;
    agrees([
      first,
      content(null),
      content('b'),
      content(7),
      content('b', { extra: 1 }),
      first.replace('"index":0', '"index":1'),
      first.replace('"index":0', '"index": 0'),
      first.replace('"a"', '"a\\x"'),
      first.replace('"a"', '"a\u0001"'),
      first.replace('"a"', '"a'),
      first.replace('"a"', '"a"b"'),
      first.replace('"up-model"', 'null'),
      first.replace('"id":"c1"', '"id":1'),
      first.replace('"content"', '"tool_calls"'),
      first.replace('"model"', '"mod\\u0065l"'),
      broken,
      `${first} `,
      `${first}x`,
      first.slice(0, -1),
      first.slice(0, -2),
      '',
      '[DONE]',
      content('c'),
    ]);
  });

  it('decides every one-byte change of a chunk as the rules do, and matches it to the template when it can', () => {
    const templates = [
      content('abc', { usage: null, system_fingerprint: 'fp' }),
      // whitespace, numbers, literals, escapes, multi-byte text, usage first; every key where keys matter
      '{\n "usage" : null,\n\t"id": "\u00e9\\"1",\r\n "created": -1.5e+3, "x": [true, false, null, 0, 0.25E-2, [], {}],' +
        ' "model": "m", "choices": [ {"index": 10, "delta": {"role": "assistant", "content": "a\\u00e9"}, ' +
        '"finish_reason": null} ] }',
    ];
    const replacements = [
      0x22, 0x5c, 0x2c, 0x3a, 0x7b, 0x7d, 0x5b, 0x5d, 0x20, 0x0a, 0x61, 0x74, 0x75, 0x45, 0x30, 0x2d, 0x2e,
      0x00, 0xc3,
    ];
    for (const template of templates) {
      const bytes = Buffer.from(template);
      const { keys, values } = stringsOf(bytes);
      for (let at = 0; at < bytes.length; at++)
        for (const byte of replacements) {
          const changed = Buffer.from(bytes);
          changed[at] = byte;
          const what = `byte ${at} of ${template} changed to 0x${byte.toString(16)}`;
          const expected = scanChunk(changed);
          // A key spelt with an escape is left to a parse: JSON may read it as one that matters.
          const passes = passable(changed) && !(byte === 0x5c && within(keys, at));
          assert.equal(expected !== undefined, passes, what);
          if (expected) assert.deepEqual(located(expected), parsedAsFastPath(changed), what);
          const scanner = new ChunkScanner();
          scanner.scan(bytes);
          assert.equal(JSON.stringify(found(scanner.scan(changed))), JSON.stringify(found(expected)), what);
          // A change inside a string value that is still a chunk is of the template's shape: no full scan.
          const sameShape = byte === bytes[at] || (within(values, at) && passes);
          assert.equal(scanner.fullScans, sameShape ? 1 : 2, what);
        }
    }
  });

  it('reads a stream of one shape with one full scan: the chunks after the first cost a byte comparison', () => {
    const scanner = new ChunkScanner();
    const chunks = [
      content('', { usage: null }),
      content('hello', { usage: null }),
      content(' a much longer piece of content than the first', { usage: null, id: 'another-id' }),
      content('a\n"b"\\ é😀\u0001', { usage: null }),
      content('a\n"b"\\ é😀\u0001', { usage: null }), // the same escaped content again: decoded again
      content('\ud83d', { usage: null, model: 'a-model-with-a-longer-name' }),
      content('', { usage: null, id: '', model: '' }),
    ];
    for (const text of chunks) {
      const bytes = Buffer.from(text);
      assert.deepEqual(found(scanner.scan(bytes)), found(scanChunk(bytes)), text);
    }
    assert.equal(scanner.fullScans, 1);
  });

  it("expects a content chunk after a role chunk: a stream's first content chunk costs a compare", () => {
    const withDelta = (delta: Record<string, unknown>): string =>
      chunk({
        choices: [{ index: 0, delta, logprobs: null, finish_reason: null }],
        system_fingerprint: 'fp',
      });
    // As OpenAI streams: the role chunk (content "", refusal null), then content chunks of the delta's content alone.
    const scanner = new ChunkScanner();
    const stream = [
      withDelta({ role: 'assistant', content: '', refusal: null }),
      withDelta({ content: 'Hello' }),
      withDelta({ content: ' world, with "quotes" and é' }),
      withDelta({ content: '' }),
    ];
    for (const text of stream) {
      const bytes = Buffer.from(text);
      assert.deepEqual(found(scanner.scan(bytes)), found(scanChunk(bytes)), text);
    }
    assert.equal(scanner.fullScans, 1);

    // Content chunks of another shape than expected are scanned in full, and decided exactly as the scan decides.
    const other = new ChunkScanner();
    const unexpected = [
      withDelta({ role: 'assistant', content: '' }),
      withDelta({ content: 'a', refusal: null }), // not the expected shape: a full scan, the new template
      withDelta({ content: 'b', refusal: null }),
      withDelta({ content: 7 }), // refused by the full scan
      withDelta({ role: 'assistant', content: '' }).replace('"content":""', '"content":"x"'),
      withDelta({ content: 'c' }).replace('"created":1', '"created":2'), // a number differs: another shape
    ];
    for (const text of unexpected) {
      const bytes = Buffer.from(text);
      assert.deepEqual(found(other.scan(bytes)), found(scanChunk(bytes)), text);
    }
    assert.equal(other.fullScans, 5);

    // A role chunk whose content is null expects nothing: its next content chunk is scanned in full.
    for (const [first, fullScans] of [
      [withDelta({ role: 'assistant', content: null }), 2],
      [withDelta({ content: '' }), 1],
    ] as const) {
      const scanner = new ChunkScanner();
      scanner.scan(Buffer.from(first));
      const next = Buffer.from(withDelta({ content: 'x' }));
      assert.deepEqual(found(scanner.scan(next)), found(scanChunk(next)), first);
      assert.equal(scanner.fullScans, fullScans, first);
    }
  });

  it('matches string values anywhere: in arrays, nested objects, before and after usage', () => {
    const shaped = (token: string, tags: string[], fp: string, text: string): string =>
      JSON.stringify({
        tags,
        id: 'c',
        usage: null,
        model: 'm',
        choices: [
          {
            index: 0,
            delta: { role: 'assistant', content: text },
            logprobs: { content: [{ token, logprob: -0.5, top_logprobs: [] }] },
            finish_reason: null,
          },
        ],
        system_fingerprint: fp,
      });
    const scanner = new ChunkScanner();
    for (const text of [
      shaped('a', ['x', 'y'], 'fp', 'a'),
      shaped('longer token', ['', 'a much longer tag'], '', 'b'),
      shaped('\u00e9', ['\n', '"'], 'fp-2', 'a much longer content'),
      shaped('', ['x', 'y'], 'fp', ''),
    ]) {
      const bytes = Buffer.from(text);
      const raw = scanner.scan(bytes)!;
      assert.deepEqual(found(raw), found(scanChunk(bytes)), text);
      assert.equal(modelOf(raw), '"m"');
      assert.equal(
        raw.text,
        (JSON.parse(text) as { choices: [{ delta: { content: string } }] }).choices[0].delta.content,
      );
      const cut = Buffer.concat([raw.bytes.subarray(0, raw.usageStart), raw.bytes.subarray(raw.usageEnd)]);
      assert.deepEqual(JSON.parse(cut.toString()), stripUsage(text));
    }
    assert.equal(scanner.fullScans, 1);
  });

  it('scans in full a chunk of another shape, which becomes the template; a refused chunk does not', () => {
    const scanner = new ChunkScanner();
    const steps: [string, number][] = [
      [content('a'), 1],
      [content('b'), 1],
      [content('b').replace('"created":1', '"created":2'), 2], // a number differs: another shape
      [content('c').replace('"created":1', '"created":2'), 2],
      [content('d'), 3],
      [content('d').slice(0, -1), 4], // not JSON: scanned in full, refused, and the template stays
      [content(7), 5], // refused by the full scan (content is a number): the template stays
      [content('e'), 5],
      [content(null), 6], // another shape, passed: the new template
      [content(null), 6],
      [content('f'), 7],
    ];
    for (const [text, fullScans] of steps) {
      const bytes = Buffer.from(text);
      assert.deepEqual(found(scanner.scan(bytes)), found(scanChunk(bytes)), text);
      assert.equal(scanner.fullScans, fullScans, text);
    }
  });

  it('does not take a chunk with a string value left out, and a change just before it, for the template', () => {
    const template = content('a', { system_fingerprint: 'fp' });
    agrees([
      template,
      template.replace('"logprobs":null', '"logprobs":true').replace('"fp"', ''),
      template.replace('"created":1', '"created":2').replace('"up-model"', ''),
    ]);
  });

  it('makes its template of the chunk it scanned, nothing of the chunk scanned before it', () => {
    // The earlier chunk has a string value more than the later one, where the later one's content string starts.
    const later = (text: string): string => `{"model":"m","choices":[{"delta":{"content":"${text}"}}]}`;
    const at = later('x').indexOf('"x"');
    const earlier = `{"model":"m","a":"${'a'.repeat(at - 24)}","b":"","choices":[{"delta":{}}]}`;
    assert.equal(earlier.indexOf('""'), at);
    agrees([earlier, later('x'), later('yz')]);
  });

  it('makes no template of a chunk of several choices or of more string values than it keeps', () => {
    const twoChoices = (a: string, b: string): string =>
      chunk({
        choices: [
          { index: 0, delta: { content: a } },
          { index: 1, delta: { content: b } },
        ],
      });
    const manyStrings = (text: string, count: number): string =>
      content(text, { tags: Array.from({ length: count }, (_, i) => `t${i}`) });
    for (const [make, scans] of [
      [(text: string) => twoChoices(text, 'x'), 3],
      [(text: string) => manyStrings(text, 60), 1], // 64 string values with the chunk's own four
      [(text: string) => manyStrings(text, 61), 3],
    ] as const) {
      const scanner = new ChunkScanner();
      for (const text of ['a', 'b', 'c']) {
        const bytes = Buffer.from(make(text));
        const raw = scanner.scan(bytes)!;
        assert.deepEqual(found(raw), found(scanChunk(bytes)));
        assert.equal(raw.text.startsWith(text), true);
      }
      assert.equal(scanner.fullScans, scans, make('a'));
    }
  });
});

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Whether the fast path may pass a chunk through as bytes, by the rules (see scanChunk), read with JSON.parse: valid
 * UTF-8 and JSON, an object with a `model` string, a non-empty `choices` array of objects, `usage` absent or null, no
 * `error`, and no delta with tool or function calls or a content other than a string or null. (Duplicate keys and
 * escaped keys are not seen by JSON.parse; callers rule those out.)
 */
function passable(bytes: Buffer): boolean {
  if (!isUtf8(bytes)) return false;
  let v: unknown;
  try {
    v = JSON.parse(bytes.toString());
  } catch {
    return false;
  }
  if (!isObject(v) || typeof v['model'] !== 'string' || 'error' in v) return false;
  if (v['usage'] !== undefined && v['usage'] !== null) return false;
  const choices = v['choices'];
  if (!Array.isArray(choices) || choices.length === 0) return false;
  return choices.every((choice) => {
    if (!isObject(choice)) return false;
    const delta = choice['delta'];
    if (!isObject(delta)) return true;
    const content = delta['content'];
    return (
      !('tool_calls' in delta) &&
      !('function_call' in delta) &&
      (content === undefined || content === null || typeof content === 'string')
    );
  });
}

/** What a passed chunk must locate, read from its own bytes: the model, the content text, the JSON without usage. */
const located = (raw: RawChunk): unknown => ({
  model: JSON.parse(modelOf(raw)) as unknown,
  text: raw.text,
  cut: JSON.parse(
    raw.usageStart === -1
      ? raw.bytes.toString()
      : Buffer.concat([raw.bytes.subarray(0, raw.usageStart), raw.bytes.subarray(raw.usageEnd)]).toString(),
  ) as unknown,
});
const parsedAsFastPath = (bytes: Buffer): unknown => {
  const v = JSON.parse(bytes.toString()) as {
    model: string;
    choices: { delta?: { content?: string | null } }[];
  };
  return {
    model: v.model,
    text: v.choices.map((choice) => choice.delta?.content ?? '').join(''),
    cut: stripUsage(bytes.toString()),
  };
};

/** The byte spans inside the quotes of a JSON text's keys and of its string values. */
function stringsOf(bytes: Buffer): { keys: [number, number][]; values: [number, number][] } {
  const keys: [number, number][] = [];
  const values: [number, number][] = [];
  for (const m of bytes.toString('latin1').matchAll(/"((?:[^"\\]|\\.)*)"(\s*:)?/g)) {
    const span: [number, number] = [m.index + 1, m.index + 1 + m[1]!.length];
    (m[2] ? keys : values).push(span);
  }
  return { keys, values };
}
const within = (spans: [number, number][], at: number): boolean =>
  spans.some(([start, end]) => at >= start && at < end);
