import type { ChatChunk } from './chat-types.ts';

/**
 * A chat-completion chunk kept as the bytes the upstream sent (the pass-through fast path): checked to be one
 * well-formed chunk, with what the front door must change located rather than parsed. Writing it means copying
 * its bytes with the model value replaced by the public id (and `usage: null` left out for a client that did not
 * ask for usage).
 */
export class RawChunk {
  /** One `chat.completion.chunk` JSON object: an event's data. */
  readonly bytes: Buffer;
  /** The `model` value (with its quotes): bytes[modelStart, modelEnd). */
  readonly modelStart: number;
  readonly modelEnd: number;
  /** A top-level `"usage":null` member with its comma, or -1 when there is none. */
  readonly usageStart: number;
  readonly usageEnd: number;
  /**
   * The one content delta's string, between its quotes and still JSON-escaped: bytes[textStart, textEnd); -1 when
   * the chunk has no content string, -2 when it has several (choices > 1: then `text` was decoded by the scan).
   */
  readonly textStart: number;
  readonly textEnd: number;
  /** The content string holds a backslash escape. */
  readonly textEscaped: boolean;
  #text: string | undefined;

  constructor(
    bytes: Buffer,
    modelStart: number,
    modelEnd: number,
    usageStart: number,
    usageEnd: number,
    textStart: number,
    textEnd: number,
    textEscaped: boolean,
    text?: string,
  ) {
    this.bytes = bytes;
    this.modelStart = modelStart;
    this.modelEnd = modelEnd;
    this.usageStart = usageStart;
    this.usageEnd = usageEnd;
    this.textStart = textStart;
    this.textEnd = textEnd;
    this.textEscaped = textEscaped;
    this.#text = text;
  }

  /** The text of the chunk's content deltas (decoded when first asked: metering keeps the bytes, see RawText). */
  get text(): string {
    if (this.#text !== undefined) return this.#text;
    const { bytes, textStart, textEnd } = this;
    if (textStart < 0) return (this.#text = '');
    return (this.#text = this.textEscaped
      ? (JSON.parse(bytes.toString('utf8', textStart - 1, textEnd + 1)) as string)
      : bytes.toString('utf8', textStart, textEnd));
  }
}

/** One chunk of a pass-through stream: raw bytes on the common path, a parsed chunk where one had to be parsed. */
export type PassChunk = RawChunk | ChatChunk;

/**
 * The content text of a stream's raw chunks, kept as their JSON-escaped bytes and decoded only when asked: it is
 * needed only when the upstream sends no usage, so the common stream never makes a string of it.
 */
export class RawText {
  #bytes: Buffer | undefined;
  #length = 0;
  #escaped = false;
  /** Text decoded before (a chunk with several content strings), ahead of the bytes. */
  #before = '';

  add(chunk: RawChunk): void {
    const { textStart, textEnd } = chunk;
    if (textStart === -1) return;
    if (textStart === -2) {
      this.#before = this.take() + chunk.text;
      return;
    }
    const length = textEnd - textStart;
    let bytes = this.#bytes;
    if (bytes === undefined || this.#length + length > bytes.length) {
      // Bytes of its own, not a slice of Buffer's shared 8 KiB pool: kept to the stream's end, a slice would keep
      // the whole pool slab alive (with 10,000 slow streams, ~8 KiB of resident memory each).
      const grown = Buffer.allocUnsafeSlow(Math.max(256, 2 * (this.#length + length)));
      if (bytes !== undefined) bytes.copy(grown, 0, 0, this.#length);
      this.#bytes = bytes = grown;
    }
    const from = chunk.bytes;
    // Content deltas are a few bytes: a loop costs less than a native copy's call.
    if (length < 64) for (let i = 0, at = this.#length; i < length; i++) bytes[at + i] = from[textStart + i]!;
    else from.copy(bytes, this.#length, textStart, textEnd);
    this.#length += length;
    if (chunk.textEscaped) this.#escaped = true;
  }

  /** The text added so far, decoded; it is then empty again. */
  take(): string {
    const bytes = this.#bytes;
    let text = this.#before;
    if (bytes !== undefined && this.#length > 0) {
      // Escaped strings joined are one escaped string (a surrogate pair split between chunks joins up).
      text += this.#escaped
        ? (JSON.parse(`"${bytes.toString('utf8', 0, this.#length)}"`) as string)
        : bytes.toString('utf8', 0, this.#length);
    }
    this.#before = '';
    this.#length = 0;
    this.#escaped = false;
    return text;
  }
}

/**
 * `text`'s UTF-8 in a buffer of its own, of exactly that size: bytes kept for a stream's life must not be a slice
 * of Buffer's shared 8 KiB pool, which they would keep alive whole.
 */
export function ownBytes(text: string): Buffer<ArrayBuffer> {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  bytes.write(text);
  return bytes;
}
