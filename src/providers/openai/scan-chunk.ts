import { isUtf8 } from 'node:buffer';
import { RawChunk } from '../../core/raw-chunk.ts';

/**
 * Checks one event's data as a chat-completion chunk without building it: a strict JSON syntax check of the bytes
 * that also finds the top-level `model` value, a top-level `usage: null`, and the text of each choice's
 * `delta.content`. Returns undefined for anything the fast path does not pass through as bytes, which the caller
 * then parses as the canonical path does: JSON that is not well-formed, not valid UTF-8 or nested deeper than 32,
 * a top-level value other than an object, no `model` string (or two), no `choices` array or an empty one, a `usage`
 * other than null, an `error`, tool-call or function-call deltas, a `content` that is neither a string nor null.
 * So the bytes that pass through are exactly the chunks the canonical path would relay unchanged but for `model`.
 */
export function scanChunk(bytes: Buffer): RawChunk | undefined {
  const s = state;
  begin(s, bytes);
  skipSpace(s);
  const ok = s.bytes[s.pos] === OPEN_BRACE && object(s, ROOT) && (skipSpace(s), s.pos === s.end);
  const chunk =
    ok && !s.parse && s.modelStart !== -1 && s.choices > 0 && (!s.nonAscii || isUtf8(bytes))
      ? new RawChunk(
          bytes,
          s.modelStart,
          s.modelEnd,
          s.usageStart,
          s.usageEnd,
          s.textStart,
          s.textEnd,
          s.textEscaped,
          s.textStart === -2 ? s.text : undefined,
        )
      : undefined;
  // The bytes are let go of; the holes stay for ChunkScanner to read.
  s.bytes = EMPTY;
  return chunk;
}

/**
 * The scan of one stream's chunks. A chunk the full scan (scanChunk) passed becomes the template for the ones
 * after it: a chunk whose bytes are the template's with only its string values different (another content, id or
 * anything spelt as a string) is the same JSON, of the same shape, so that checking its bytes against the
 * template's and each of its string values strictly decides it exactly as the full scan would. That is the common
 * chunk (a stream's content chunks differ only in their content), and it costs a byte comparison. Anything else
 * gets the full scan, which then makes the template.
 */
export class ChunkScanner {
  #template: Template | undefined;
  /**
   * The template a content chunk is expected to have after the stream's first chunk when its delta holds more than
   * its content (`{"role":"assistant","content":""}`): that chunk with its delta cut down to the content member. It
   * is made when the first chunk is scanned, so the stream's first content chunk, whose time is the stream's time
   * to first token, costs a compare rather than a full scan.
   */
  #expected: Template | undefined;
  #fullScans = 0;

  /** How many chunks had the full scan (the first, and each not of the template's shape): the rest cost a compare. */
  get fullScans(): number {
    return this.#fullScans;
  }

  scan(bytes: Buffer): RawChunk | undefined {
    const template = this.#template;
    if (template !== undefined) {
      const chunk = matchTemplate(template, bytes);
      if (chunk !== undefined) return chunk;
    }
    const expected = this.#expected;
    if (expected !== undefined) {
      this.#expected = undefined;
      const chunk = matchTemplate(expected, bytes);
      if (chunk !== undefined) {
        this.#template = expected;
        return chunk;
      }
    }
    this.#fullScans++;
    const chunk = scanChunk(bytes);
    const made = templateOfScanned(bytes, chunk);
    if (made !== undefined) {
      this.#template = made;
      // Only after the stream's first chunk: a stream whose every chunk carries its role (and a number that
      // changes) would otherwise pay a second full scan for each. Not a chunk read: not in `fullScans`.
      const content = this.#fullScans === 1 ? contentOnly(bytes) : undefined;
      if (content !== undefined) this.#expected = templateOfScanned(content, scanChunk(content));
    }
    return chunk;
  }
}

/** The template of `bytes`, which the full scan just decided as `chunk`; undefined when it cannot be one. */
function templateOfScanned(bytes: Buffer, chunk: RawChunk | undefined): Template | undefined {
  // A chunk of several content strings (choices > 1) is not a template: its text is decoded by the scan.
  return chunk !== undefined && chunk.textStart !== -2 && state.holeCount <= MAX_HOLES
    ? templateOf(bytes, chunk)
    : undefined;
}

/**
 * The chunk the full scan just passed with its delta cut down to its content member, when the delta held other
 * members beside a content string (see ChunkScanner's `#expected`); undefined otherwise.
 */
function contentOnly(bytes: Buffer): Buffer | undefined {
  const s = state;
  if (s.choices !== 1 || s.deltaMembers < 2 || s.contentKeyStart === -1) return undefined;
  return Buffer.concat([
    bytes.subarray(0, s.deltaStart + 1),
    bytes.subarray(s.contentKeyStart, s.textEnd + 1),
    bytes.subarray(s.deltaEnd - 1),
  ]);
}

/** A chunk the full scan passed: its bytes, where its string values are, which one is `model` and the content. */
interface Template {
  bytes: Buffer;
  /** Each string value's span, quotes included: [start, end) pairs, in order. */
  holes: Int32Array;
  modelHole: number;
  /** The content string's hole, or -1, and whether it holds an escape. */
  contentHole: number;
  contentEscaped: boolean;
  usageStart: number;
  usageEnd: number;
}

const MAX_HOLES = 64;

function templateOf(bytes: Buffer, chunk: RawChunk): Template {
  const s = state;
  let modelHole = -1;
  let contentHole = -1;
  for (let k = 0; k < s.holeCount; k++) {
    const start = s.holes[2 * k]!;
    if (start === chunk.modelStart) modelHole = k;
    else if (start === chunk.textStart - 1) contentHole = k;
  }
  return {
    // A copy: the chunk's bytes may be a view of a large read.
    bytes: Buffer.from(bytes),
    holes: s.holes.slice(0, 2 * s.holeCount),
    modelHole,
    contentHole,
    contentEscaped: chunk.textEscaped,
    usageStart: chunk.usageStart,
    usageEnd: chunk.usageEnd,
  };
}

/** `bytes` as a chunk of the template's shape (see ChunkScanner), or undefined when they are not one. */
function matchTemplate(t: Template, bytes: Buffer): RawChunk | undefined {
  const s = state;
  begin(s, bytes);
  const from = t.bytes;
  const holes = t.holes;
  const length = bytes.length;
  let i = 0;
  let j = 0;
  /** How far this chunk's bytes are ahead of the template's, past the holes so far. */
  let shift = 0;
  let modelStart = -1;
  let modelEnd = -1;
  let textStart = -1;
  let textEnd = -1;
  let textEscaped = false;
  let usageStart = -1;
  let usageEnd = -1;
  let matched = true;
  for (let k = 0; k < holes.length; k += 2) {
    const holeStart = holes[k]!;
    const holeEnd = holes[k + 1]!;
    if (t.usageStart !== -1 && usageStart === -1 && t.usageStart < holeStart) {
      usageStart = t.usageStart + shift;
      usageEnd = t.usageEnd + shift;
    }
    // The bytes up to the hole and the hole are compared at once: most holes are the template's own string.
    const fixed = holeStart - j;
    const n = Math.min(holeEnd - j, length - i);
    let x = 0;
    while (x < n && bytes[i + x] === from[j + x]) x++;
    const start = i + fixed;
    let end: number;
    let escaped: boolean;
    if (x === holeEnd - j) {
      end = i + x;
      escaped = k >> 1 === t.contentHole && t.contentEscaped;
    } else {
      // A difference before the hole's opening quote is another shape; inside it, another string, checked.
      s.pos = start;
      if (x <= fixed || !string(s)) {
        matched = false;
        break;
      }
      end = s.pos;
      escaped = s.escaped;
    }
    const hole = k >> 1;
    if (hole === t.modelHole) {
      modelStart = start;
      modelEnd = end;
    } else if (hole === t.contentHole) {
      textStart = start + 1;
      textEnd = end - 1;
      textEscaped = escaped;
    }
    shift += end - start - (holeEnd - holeStart);
    i = end;
    j = holeEnd;
  }
  if (t.usageStart !== -1 && usageStart === -1) {
    usageStart = t.usageStart + shift;
    usageEnd = t.usageEnd + shift;
  }
  matched &&= length - i === from.length - j && sameBytes(bytes, i, from, j, length - i);
  const chunk =
    matched && (!s.nonAscii || isUtf8(bytes))
      ? new RawChunk(bytes, modelStart, modelEnd, usageStart, usageEnd, textStart, textEnd, textEscaped)
      : undefined;
  s.bytes = EMPTY;
  return chunk;
}

/** a[i, i + n) equals b[j, j + n). */
function sameBytes(a: Buffer, i: number, b: Buffer, j: number, n: number): boolean {
  for (let x = 0; x < n; x++) if (a[i + x] !== b[j + x]) return false;
  return true;
}

// Where a value sits, which decides what the scan records of it.
const OTHER = 0;
const ROOT = 1;
const CHOICES = 2;
const CHOICE = 3;
const DELTA = 4;

const MAX_DEPTH = 32;
const EMPTY = Buffer.alloc(0);

/** The member an object scan is at: its key without quotes, its value, the comma before it (-1: none). */
interface Member {
  keyStart: number;
  keyEnd: number;
  valueStart: number;
  valueEnd: number;
  comma: number;
}

interface ScanState {
  member: Member;
  bytes: Buffer;
  pos: number;
  end: number;
  depth: number;
  /** Well-formed so far, but the chunk must be parsed (see scanChunk). */
  parse: boolean;
  nonAscii: boolean;
  modelStart: number;
  modelEnd: number;
  usageStart: number;
  usageEnd: number;
  /** The number of choices; -1 while no `choices` array was seen. */
  choices: number;
  /**
   * The number of the choice whose `delta` key, and whose delta's `content` key, was seen last: a second one in the
   * same choice is a repeated key, which JSON reads as the last, so the chunk is parsed.
   */
  deltaChoice: number;
  contentChoice: number;
  /** The content string's span (see RawChunk.textStart), its escape, and the text of several, decoded. */
  textStart: number;
  textEnd: number;
  textEscaped: boolean;
  text: string;
  /** Set by string(): the string held a backslash escape. */
  escaped: boolean;
  /** Each string value's span (not keys'), as [start, end) pairs; counted past the room there is. */
  holes: Int32Array;
  holeCount: number;
  /** The delta object's span, braces included, and how many members it has (one choice's; see contentOnly). */
  deltaStart: number;
  deltaEnd: number;
  deltaMembers: number;
  /** Where the content member whose string is the text begins (its key's opening quote), or -1. */
  contentKeyStart: number;
}

/** Sets `s` up to scan `bytes` from their start. */
function begin(s: ScanState, bytes: Buffer): void {
  s.bytes = bytes;
  s.pos = 0;
  s.end = bytes.length;
  s.depth = 0;
  s.parse = false;
  s.nonAscii = false;
  s.modelStart = -1;
  s.modelEnd = -1;
  s.usageStart = -1;
  s.usageEnd = -1;
  s.choices = -1;
  s.deltaChoice = -1;
  s.contentChoice = -1;
  s.textStart = -1;
  s.textEnd = -1;
  s.textEscaped = false;
  s.text = '';
  s.escaped = false;
  s.holeCount = 0;
  s.deltaStart = -1;
  s.deltaEnd = -1;
  s.deltaMembers = 0;
  s.contentKeyStart = -1;
}

/** Notes a string value's span (for the template a full scan makes). */
function hole(s: ScanState, start: number, end: number): void {
  const at = 2 * s.holeCount++;
  if (at < s.holes.length) {
    s.holes[at] = start;
    s.holes[at + 1] = end;
  }
}

// One state, reused: a scan never yields, so no two overlap.
const state = {
  member: { keyStart: 0, keyEnd: 0, valueStart: 0, valueEnd: 0, comma: -1 },
  holes: new Int32Array(2 * MAX_HOLES),
} as ScanState;
begin(state, Buffer.alloc(0));

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;

const key = (name: string): Buffer => Buffer.from(name);
const MODEL = key('model');
const USAGE = key('usage');
const ERROR = key('error');
const CHOICES_KEY = key('choices');
const DELTA_KEY = key('delta');
const CONTENT = key('content');
const TOOL_CALLS = key('tool_calls');
const FUNCTION_CALL = key('function_call');
const NULL = key('null');
const TRUE = key('true');
const FALSE = key('false');

function skipSpace(s: ScanState): void {
  const b = s.bytes;
  while (s.pos < s.end) {
    const c = b[s.pos]!;
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return;
    s.pos++;
  }
}

/** `bytes[start, end)` (a key without its quotes, or a literal) is `name`. */
function bytesAre(b: Buffer, start: number, end: number, name: Buffer): boolean {
  if (end - start !== name.length) return false;
  for (let i = 0; i < name.length; i++) if (b[start + i] !== name[i]) return false;
  return true;
}

function value(s: ScanState, where: number): boolean {
  const c = s.bytes[s.pos];
  if (c === QUOTE) return string(s);
  if (c === OPEN_BRACE) return object(s, where);
  if (c === OPEN_BRACKET) return array(s, where);
  if (c === 0x74) return literal(s, TRUE);
  if (c === 0x66) return literal(s, FALSE);
  if (c === 0x6e) return literal(s, NULL);
  return number(s);
}

function object(s: ScanState, where: number): boolean {
  if (++s.depth > MAX_DEPTH) return false;
  const b = s.bytes;
  s.pos++;
  skipSpace(s);
  if (b[s.pos] === CLOSE_BRACE) {
    s.pos++;
    s.depth--;
    return true;
  }
  let comma = -1;
  for (;;) {
    if (b[s.pos] !== QUOTE) return false;
    const keyStart = s.pos;
    if (!string(s)) return false;
    const keyEnd = s.pos;
    // A key spelt with an escape may be one that matters (JSON reads `"mod\u0065l"` as `model`): parsed.
    if (s.escaped && where !== OTHER) s.parse = true;
    skipSpace(s);
    if (b[s.pos] !== COLON) return false;
    s.pos++;
    skipSpace(s);
    const valueStart = s.pos;
    const inner = childOf(s, where, b, keyStart + 1, keyEnd - 1);
    if (!value(s, inner)) return false;
    const valueEnd = s.pos;
    if (b[valueStart] === QUOTE) hole(s, valueStart, valueEnd);
    else if (inner === DELTA) {
      s.deltaStart = valueStart;
      s.deltaEnd = valueEnd;
    }
    skipSpace(s);
    if (where === DELTA) s.deltaMembers++;
    if (where === ROOT || where === DELTA) {
      const member = s.member;
      member.keyStart = keyStart + 1;
      member.keyEnd = keyEnd - 1;
      member.valueStart = valueStart;
      member.valueEnd = valueEnd;
      member.comma = comma;
      if (where === ROOT) root(s, b, member);
      else delta(s, b, member);
    }
    const c = b[s.pos];
    if (c === CLOSE_BRACE) {
      s.pos++;
      s.depth--;
      return true;
    }
    if (c !== COMMA) return false;
    comma = s.pos;
    s.pos++;
    skipSpace(s);
  }
}

/** Where a member's value sits, from where its object sits and its key. */
function childOf(s: ScanState, where: number, b: Buffer, start: number, end: number): number {
  if (where === ROOT) {
    if (bytesAre(b, start, end, CHOICES_KEY)) {
      if (b[s.pos] !== OPEN_BRACKET || s.choices !== -1) s.parse = true;
      return CHOICES;
    }
    return OTHER;
  }
  if (where === CHOICE && bytesAre(b, start, end, DELTA_KEY)) {
    if (s.deltaChoice === s.choices) s.parse = true;
    s.deltaChoice = s.choices;
    return DELTA;
  }
  return OTHER;
}

/** A top-level member: `model`, `usage` and `error` matter. */
function root(s: ScanState, b: Buffer, { keyStart, keyEnd, valueStart, valueEnd, comma }: Member): void {
  if (bytesAre(b, keyStart, keyEnd, MODEL)) {
    if (s.modelStart !== -1 || b[valueStart] !== QUOTE) s.parse = true;
    s.modelStart = valueStart;
    s.modelEnd = valueEnd;
  } else if (bytesAre(b, keyStart, keyEnd, USAGE)) {
    if (s.usageStart !== -1 || !bytesAre(b, valueStart, valueEnd, NULL)) return void (s.parse = true);
    // Cut with the comma before it, or (the first member) the one after it, so what is left is still JSON.
    if (comma !== -1) {
      s.usageStart = comma;
      s.usageEnd = valueEnd;
    } else {
      s.usageStart = keyStart - 1;
      s.usageEnd = b[s.pos] === COMMA ? s.pos + 1 : valueEnd;
    }
  } else if (bytesAre(b, keyStart, keyEnd, ERROR)) s.parse = true;
}

/** A delta's member: its content is metered; tool and function calls are parsed. */
function delta(s: ScanState, b: Buffer, { keyStart, keyEnd, valueStart, valueEnd }: Member): void {
  if (bytesAre(b, keyStart, keyEnd, CONTENT)) {
    if (s.contentChoice === s.choices) s.parse = true;
    s.contentChoice = s.choices;
    if (b[valueStart] === QUOTE) {
      // One content string is kept as its span (decoded only if metering needs it); several are decoded here.
      if (s.textStart === -1) {
        s.textStart = valueStart + 1;
        s.textEnd = valueEnd - 1;
        s.textEscaped = s.escaped;
        s.contentKeyStart = keyStart - 1;
      } else {
        if (s.textStart !== -2) s.text = textOf(b, s.textStart - 1, s.textEnd + 1);
        s.textStart = -2;
        s.text += textOf(b, valueStart, valueEnd);
      }
    } else if (!bytesAre(b, valueStart, valueEnd, NULL)) s.parse = true;
  } else if (bytesAre(b, keyStart, keyEnd, TOOL_CALLS) || bytesAre(b, keyStart, keyEnd, FUNCTION_CALL))
    s.parse = true;
}

/** A string value's text: its bytes as they are, or JSON's own decoding when it holds an escape. */
function textOf(b: Buffer, start: number, end: number): string {
  for (let i = start + 1; i < end - 1; i++)
    if (b[i] === BACKSLASH) return JSON.parse(b.toString('utf8', start, end)) as string;
  return b.toString('utf8', start + 1, end - 1);
}

function array(s: ScanState, where: number): boolean {
  if (++s.depth > MAX_DEPTH) return false;
  const b = s.bytes;
  s.pos++;
  skipSpace(s);
  if (where === CHOICES) s.choices = 0;
  if (b[s.pos] === CLOSE_BRACKET) {
    s.pos++;
    s.depth--;
    return true;
  }
  for (;;) {
    if (where === CHOICES) {
      s.choices++;
      if (b[s.pos] !== OPEN_BRACE) s.parse = true;
    }
    const valueStart = s.pos;
    if (!value(s, where === CHOICES ? CHOICE : OTHER)) return false;
    if (b[valueStart] === QUOTE) hole(s, valueStart, s.pos);
    skipSpace(s);
    const c = b[s.pos];
    if (c === CLOSE_BRACKET) {
      s.pos++;
      s.depth--;
      return true;
    }
    if (c !== COMMA) return false;
    s.pos++;
    skipSpace(s);
  }
}

/** A string, strictly: no control characters, only JSON's escapes. Sets `escaped`. */
function string(s: ScanState): boolean {
  const b = s.bytes;
  const end = s.end;
  let i = s.pos + 1;
  s.escaped = false;
  while (i < end) {
    const c = b[i]!;
    if (c === QUOTE) {
      s.pos = i + 1;
      return true;
    }
    if (c < 0x20) return false;
    if (c >= 0x80) s.nonAscii = true;
    else if (c === BACKSLASH) {
      s.escaped = true;
      const e = b[i + 1];
      if (e === 0x75 /* u */) {
        for (let h = i + 2; h < i + 6; h++) if (!isHex(b[h])) return false;
        i += 6;
        continue;
      }
      if (
        e !== QUOTE &&
        e !== BACKSLASH &&
        e !== 0x2f &&
        e !== 0x62 &&
        e !== 0x66 &&
        e !== 0x6e &&
        e !== 0x72 &&
        e !== 0x74
      )
        return false;
      i += 2;
      continue;
    }
    i++;
  }
  return false;
}

const isHex = (c: number | undefined): boolean =>
  c !== undefined && ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66));

const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;

/** JSON's number grammar: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
function number(s: ScanState): boolean {
  const b = s.bytes;
  let i = s.pos;
  if (b[i] === 0x2d) i++;
  if (b[i] === 0x30) i++;
  else if (isDigit(b[i])) while (isDigit(b[i])) i++;
  else return false;
  if (b[i] === 0x2e) {
    i++;
    if (!isDigit(b[i])) return false;
    while (isDigit(b[i])) i++;
  }
  if (b[i] === 0x65 || b[i] === 0x45) {
    i++;
    if (b[i] === 0x2b || b[i] === 0x2d) i++;
    if (!isDigit(b[i])) return false;
    while (isDigit(b[i])) i++;
  }
  if (i > s.end) return false;
  s.pos = i;
  return true;
}

function literal(s: ScanState, word: Buffer): boolean {
  if (s.pos + word.length > s.end) return false;
  for (let i = 0; i < word.length; i++) if (s.bytes[s.pos + i] !== word[i]) return false;
  s.pos += word.length;
  return true;
}
