/**
 * Where the text of a Messages API `content_block_delta` event carrying a `text_delta` starts in its bytes, when the
 * event is exactly in the form Anthropic writes it:
 * `{"type":"content_block_delta","index":N,"delta":{"type":"text_delta","text":"…"}}`: the text, still JSON-escaped,
 * is data[start, data.length - 3). NOT_TEXT_DELTA for anything else (other events, other spacing or member order, a
 * string with a raw quote or control character), which the caller then parses; ESCAPED_TEXT_DELTA when the form is
 * right but the string holds a backslash escape (which textDeltaOf decodes, and refuses when it is not well-formed).
 */
export function textDeltaStart(data: Buffer): number {
  const end = data.length - SUFFIX.length;
  if (end < PREFIX.length + 1 + MIDDLE.length) return NOT_TEXT_DELTA;
  if (!bytesAt(data, 0, PREFIX)) return NOT_TEXT_DELTA;
  // The index: a JSON integer (no sign, no leading zero).
  let at = PREFIX.length;
  const first = data[at]!;
  if (first === ZERO) at++;
  else if (first > ZERO && first <= NINE) while (at < end && data[at]! >= ZERO && data[at]! <= NINE) at++;
  else return NOT_TEXT_DELTA;
  if (at + MIDDLE.length > end) return NOT_TEXT_DELTA;
  if (!bytesAt(data, at, MIDDLE) || !bytesAt(data, end, SUFFIX)) return NOT_TEXT_DELTA;
  const start = at + MIDDLE.length;
  let escaped = false;
  let high = false;
  for (let i = start; i < end; i++) {
    const c = data[i]!;
    if (c === QUOTE || c < 0x20) return NOT_TEXT_DELTA;
    if (c === BACKSLASH) {
      escaped = true;
      i++;
    } else if (c > 0x7f) high = true;
  }
  lastTextDelta.nonAscii = high;
  return escaped ? ESCAPED_TEXT_DELTA : start;
}

/** Of the last text delta textDeltaStart found: whether its text has bytes above 0x7f (to check as UTF-8). */
export const lastTextDelta = { nonAscii: false };

export const NOT_TEXT_DELTA = -1;
export const ESCAPED_TEXT_DELTA = -2;

/**
 * The text of a text_delta event in Anthropic's own form (see textDeltaStart), read off its bytes without parsing
 * the JSON; undefined for anything else, which the caller then parses. What it accepts is well-formed JSON whose
 * parse would give the same text.
 */
export function textDeltaOf(data: Buffer): string | undefined {
  const start = textDeltaStart(data);
  if (start >= 0) return data.toString('utf8', start, data.length - SUFFIX.length);
  if (start === NOT_TEXT_DELTA) return undefined;
  // Escapes are rare in a text delta: JSON.parse decodes them (and refuses a bad one, or a quote escaped at the end).
  try {
    return JSON.parse(data.toString('utf8', escapedStart(data), data.length - SUFFIX.length + 1)) as string;
  } catch {
    return undefined;
  }
}

/** The opening quote of an escaped text delta's string (after the index, whose digits textDeltaStart checked). */
function escapedStart(data: Buffer): number {
  let at = PREFIX.length;
  while (data[at]! >= ZERO && data[at]! <= NINE) at++;
  return at + MIDDLE.length - 1;
}

/**
 * True for an event that makes no canonical event, in the form Anthropic writes it: `{"type":"ping"}`,
 * `{"type":"content_block_stop","index":N}`, and the start of a text block with no text yet,
 * `{"type":"content_block_start","index":N,"content_block":{"type":"text","text":""}}`. Anything else (another
 * form of the same events included) is left to the parse, which ignores them too.
 */
export function quietEvent(data: Buffer): boolean {
  if (data.length === PING.length) return bytesAt(data, 0, PING);
  if (bytesAt(data, 0, BLOCK_STOP)) return indexThen(data, BLOCK_STOP.length, OBJECT_END);
  if (bytesAt(data, 0, BLOCK_START)) return indexThen(data, BLOCK_START.length, EMPTY_TEXT_BLOCK);
  return false;
}

/** True when data[at…] is a JSON integer and then exactly `rest`, to the end. */
function indexThen(data: Buffer, at: number, rest: Buffer): boolean {
  const first = data[at];
  if (first === ZERO) at++;
  else if (first !== undefined && first > ZERO && first <= NINE)
    while (at < data.length && data[at]! >= ZERO && data[at]! <= NINE) at++;
  else return false;
  return data.length - at === rest.length && bytesAt(data, at, rest);
}

/** True when `data` holds `bytes` at `at` (a loop: Buffer.compare with offsets is a native call, dearer here). */
function bytesAt(data: Buffer, at: number, bytes: Buffer): boolean {
  for (let i = 0; i < bytes.length; i++) if (data[at + i] !== bytes[i]) return false;
  return true;
}

const PREFIX = Buffer.from('{"type":"content_block_delta","index":');
const MIDDLE = Buffer.from(',"delta":{"type":"text_delta","text":"');
const SUFFIX = Buffer.from('"}}');
const PING = Buffer.from('{"type":"ping"}');
const BLOCK_STOP = Buffer.from('{"type":"content_block_stop","index":');
const OBJECT_END = Buffer.from('}');
const BLOCK_START = Buffer.from('{"type":"content_block_start","index":');
const EMPTY_TEXT_BLOCK = Buffer.from(',"content_block":{"type":"text","text":""}}');
const ZERO = 0x30;
const NINE = 0x39;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
