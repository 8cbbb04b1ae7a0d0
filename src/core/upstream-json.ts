import type { ChatCompletion } from './chat-types.ts';

/**
 * A whole answer's JSON text as the upstream sent it, kept on its parse (an OpenAI-type upstream's): the client then
 * gets this text with only the top-level `model` value replaced, instead of the parse serialised again. Whoever
 * changes anything in the parse but `model` drops it (see withoutUpstreamJson).
 */
interface UpstreamJson {
  text: string;
  /** The top-level `model` value, quotes included: text[modelStart, modelEnd). */
  modelStart: number;
  modelEnd: number;
}

const UPSTREAM_JSON = Symbol('upstream JSON');

type WithUpstreamJson = ChatCompletion & { [UPSTREAM_JSON]?: UpstreamJson | undefined };

/**
 * Keeps `text` (which JSON.parse turned into `completion`) on the completion when its top-level `model` can be
 * found for certain by a cheap look; otherwise nothing is kept and the answer is serialised from the parse.
 */
export function keepUpstreamJson(completion: ChatCompletion, text: string): void {
  const span = topLevelModel(text);
  if (span !== undefined)
    (completion as WithUpstreamJson)[UPSTREAM_JSON] = { text, modelStart: span[0], modelEnd: span[1] };
}

/** Drops the upstream's text: the parse was changed in more than its `model`. */
export function withoutUpstreamJson(completion: ChatCompletion): void {
  if ((completion as WithUpstreamJson)[UPSTREAM_JSON] !== undefined)
    (completion as WithUpstreamJson)[UPSTREAM_JSON] = undefined;
}

/** The completion as JSON text: the upstream's own with the completion's `model` put in, or the parse serialised. */
export function completionJson(completion: ChatCompletion): string {
  const kept = (completion as WithUpstreamJson)[UPSTREAM_JSON];
  if (kept === undefined) return JSON.stringify(completion);
  const { text, modelStart, modelEnd } = kept;
  return text.slice(0, modelStart) + JSON.stringify(completion.model) + text.slice(modelEnd);
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const MODEL_KEY = '"model"';

/**
 * The span of the top-level `"model"` member's string value in `text`, which must be well-formed JSON (it was
 * parsed). Undefined for anything but the plain case: no `"model"` key or more than one anywhere (a nested one,
 * or a repeated one, which JSON reads as the last), one not at the top level or not followed by a string, or a
 * `\u` escape anywhere (a key could spell `model` with one, which JSON reads as the same key).
 */
export function topLevelModel(text: string): [number, number] | undefined {
  const at = text.indexOf(MODEL_KEY);
  if (at < 0 || text.includes(MODEL_KEY, at + MODEL_KEY.length) || text.includes('\\u')) return undefined;
  // Outside strings, brackets and braces count the depth; the key must sit in the root object, outside a string.
  let depth = 0;
  let inString = false;
  for (let i = 0; i < at; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) depth--;
  }
  if (inString || depth !== 1) return undefined;
  let i = skipSpace(text, at + MODEL_KEY.length);
  if (text.charCodeAt(i) !== COLON) return undefined;
  i = skipSpace(text, i + 1);
  if (text.charCodeAt(i) !== QUOTE) return undefined;
  const start = i;
  for (i++; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === BACKSLASH) i++;
    else if (c === QUOTE) return [start, i + 1];
  }
  return undefined;
}

function skipSpace(text: string, from: number): number {
  let i = from;
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
}
