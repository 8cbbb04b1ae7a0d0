/**
 * The text of a Messages API `content_block_delta` event carrying a `text_delta`, read off its bytes without
 * parsing the JSON, when the event is exactly in the form Anthropic writes it:
 * `{"type":"content_block_delta","index":N,"delta":{"type":"text_delta","text":"…"}}`. Returns undefined for
 * anything else (other events, other spacing or member order, a text that is not a well-formed JSON string), which
 * the caller then parses. What it accepts is well-formed JSON whose parse would give the same text.
 */
export function textDeltaOf(data: Buffer): string | undefined {
  const end = data.length - SUFFIX.length;
  if (end < PREFIX.length + 1 + MIDDLE.length) return undefined;
  if (!bytesAt(data, 0, PREFIX)) return undefined;
  // The index: a JSON integer (no sign, no leading zero).
  let at = PREFIX.length;
  const first = data[at]!;
  if (first === ZERO) at++;
  else if (first > ZERO && first <= NINE) while (at < end && data[at]! >= ZERO && data[at]! <= NINE) at++;
  else return undefined;
  if (at + MIDDLE.length > end) return undefined;
  if (!bytesAt(data, at, MIDDLE) || !bytesAt(data, end, SUFFIX)) return undefined;
  const start = at + MIDDLE.length;
  let escaped = false;
  for (let i = start; i < end; i++) {
    const c = data[i]!;
    if (c === QUOTE || c < 0x20) return undefined;
    if (c === BACKSLASH) {
      escaped = true;
      i++;
    }
  }
  if (!escaped) return data.toString('utf8', start, end);
  // Escapes are rare in a text delta: JSON.parse decodes them (and refuses a bad one, or a quote escaped at the end).
  try {
    return JSON.parse(`"${data.toString('utf8', start, end)}"`) as string;
  } catch {
    return undefined;
  }
}

/** True when `data` holds `bytes` at `at` (a loop: Buffer.compare with offsets is a native call, dearer here). */
function bytesAt(data: Buffer, at: number, bytes: Buffer): boolean {
  for (let i = 0; i < bytes.length; i++) if (data[at + i] !== bytes[i]) return false;
  return true;
}

const PREFIX = Buffer.from('{"type":"content_block_delta","index":');
const MIDDLE = Buffer.from(',"delta":{"type":"text_delta","text":"');
const SUFFIX = Buffer.from('"}}');
const ZERO = 0x30;
const NINE = 0x39;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
