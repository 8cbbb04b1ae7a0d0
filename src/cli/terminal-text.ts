/**
 * Characters a terminal acts on instead of showing: C0 controls (ESC starts cursor moves, title changes,
 * OSC 8 links), DEL, C1 controls (U+009B is a one-character CSI), and the Unicode format characters that
 * reorder or hide text (bidi overrides and isolates, zero-width characters).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;

/** CONTROL without C0, which JSON.stringify escapes inside strings (its own line breaks must stay). */
const BEYOND_C0 = /[\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;

/** A colour or weight change as `styleText` writes it, the one sequence the CLI itself sends. */
// eslint-disable-next-line no-control-regex -- the escape sequence styleText writes
const SGR = /(\u001b\[[0-9;]*m)/;

/** Each control character as a visible escape (`\x1b`, `\u202e`). */
const escaped = (char: string): string => {
  const code = char.charCodeAt(0);
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
};

/**
 * A string from the gateway (a key's name, an e-mail, an announcement's title: what tenants and operators
 * typed) made safe to print: every control character becomes a visible escape, so nothing a tenant wrote
 * can move the cursor, rewrite lines, set the window title or make a link.
 */
export function printable(text: string): string {
  return text.replace(CONTROL, escaped);
}

/** As printable, but the CLI's own colour sequences (made by `style` around printable text) pass. */
export function printableStyled(text: string): string {
  // split with a capturing group: the sequences are at the odd places.
  return text
    .split(SGR)
    .map((part, index) => (index % 2 === 1 ? part : printable(part)))
    .join('');
}

/**
 * JSON for a terminal: JSON.stringify already writes C0 controls as `\u001b`; this also writes C1 and the
 * format characters as `\uXXXX`, which reads back as the same string.
 */
export function printableJson(json: string): string {
  return json.replace(BEYOND_C0, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
