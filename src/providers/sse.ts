import { ProviderError } from '../core/provider-error.ts';

export interface SseEvent {
  event: string | undefined;
  data: string;
}

/** The longest event (or line) kept while it arrives: far above any real chunk, a bound on a broken stream. */
const MAX_EVENT_CHARS = 16 * 1024 * 1024;

/**
 * Parses a Server-Sent Events byte stream into events as they complete (WHATWG rules: `data:` lines
 * joined by newlines, `event:` names the event, a blank line dispatches, `:` lines are comments, `id:`
 * and `retry:` are of no use to a single request and are skipped). Bytes are decoded as a stream, so a
 * character split between reads arrives whole; a CR that ends a read waits for the next one, which may
 * start with its LF. An event over 16 MiB is a `protocol` ProviderError.
 */
export async function* parseSse(body: AsyncIterable<Buffer | string>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event: string | undefined;
  let data: string[] = [];
  let dataChars = 0;
  // A line end: CRLF, CR or LF. Each stream has its own (a global pattern keeps its position).
  const lineEnd = /\r\n|\r|\n/g;
  for await (const piece of body) {
    buffer += typeof piece === 'string' ? piece : decoder.decode(piece, { stream: true });
    let start = 0;
    lineEnd.lastIndex = 0;
    for (let match = lineEnd.exec(buffer); match !== null; match = lineEnd.exec(buffer)) {
      // A CR at the very end may be the first half of a CRLF: decide once the next piece is here.
      if (match[0] === '\r' && lineEnd.lastIndex === buffer.length) break;
      const line = buffer.slice(start, match.index);
      start = lineEnd.lastIndex;
      if (line === '') {
        if (data.length > 0) yield { event, data: data.length === 1 ? data[0]! : data.join('\n') };
        event = undefined;
        data = [];
        dataChars = 0;
        continue;
      }
      if (line.charCodeAt(0) === 58 /* ':' */) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.charCodeAt(0) === 32 /* ' ' */) value = value.slice(1);
      if (field === 'data') {
        data.push(value);
        dataChars += value.length;
      } else if (field === 'event') event = value;
    }
    if (start > 0) buffer = buffer.slice(start);
    if (buffer.length + dataChars > MAX_EVENT_CHARS)
      throw new ProviderError('protocol', 'upstream sent a stream event over 16 MiB');
  }
  buffer += decoder.decode();
  // A stream cut inside its last line or event: what is whole is still given (the caller decides what an
  // unfinished stream means).
  if (buffer !== '' && buffer !== '\r') {
    const line = buffer.replace(/\r$/, '');
    if (line.startsWith('data:')) data.push(line.slice(line.charCodeAt(5) === 32 ? 6 : 5));
  }
  if (data.length > 0) yield { event, data: data.join('\n') };
}

const LF = 10;
const CR = 13;
const COLON = 58;
const SPACE = 32;
const NEWLINE = Buffer.from('\n');

/**
 * The same WHATWG rules as parseSse, on bytes, for the pass-through path: each upstream read is scanned for line
 * ends (no decoding, no strings), and each complete event's data is handed over as bytes, in order. Only a line
 * that is not finished at the end of a read is kept (and the data lines of an event not yet dispatched), so a
 * character or an event split between reads is whole when it is handed over. Event names are not kept: the
 * chat-completions protocol does not use them.
 */
export class SseByteScanner {
  /** The unfinished line at the end of the last read. */
  #pending: Buffer | undefined;
  /** The data lines of the event being read: the first, and any after it (rare: data is one line in practice). */
  #data: Buffer | undefined;
  #more: Buffer[] | undefined;
  #dataBytes = 0;
  /** The last read ended with a CR: an LF that starts the next one belongs to it. */
  #afterCr = false;

  /**
   * Scans one read; `onEvent` gets each event's data as it completes and returns false to stop (the rest of the
   * read is dropped: the caller is done with the stream). An event over 16 MiB is a `protocol` ProviderError.
   */
  push(read: Buffer, onEvent: (data: Buffer) => boolean): void {
    let buffer = read;
    let start = 0;
    if (this.#afterCr) {
      this.#afterCr = false;
      if (buffer.length > 0 && buffer[0] === LF) start = 1;
    }
    if (this.#pending !== undefined) {
      buffer = Buffer.concat([this.#pending, buffer.subarray(start)]);
      start = 0;
      this.#pending = undefined;
    }
    const hasCr = buffer.indexOf(CR, start) !== -1;
    while (start < buffer.length) {
      let end: number;
      let next: number;
      if (!hasCr) {
        // The blank line that ends an event is found without a search.
        end = buffer[start] === LF ? start : buffer.indexOf(LF, start);
        if (end === -1) break;
        next = end + 1;
      } else {
        end = start;
        while (end < buffer.length && buffer[end] !== LF && buffer[end] !== CR) end++;
        if (end === buffer.length) break;
        next = end + 1;
        if (buffer[end] === CR) {
          if (next === buffer.length) this.#afterCr = true;
          else if (buffer[next] === LF) next++;
        }
      }
      if (!this.#line(buffer, start, end, onEvent)) return;
      start = next;
    }
    if (start < buffer.length) this.#pending = buffer.subarray(start);
    // The event being read: its data lines so far and its unfinished line (a read may end on a line's end).
    if ((this.#pending?.length ?? 0) + this.#dataBytes > MAX_EVENT_CHARS)
      throw new ProviderError('protocol', 'upstream sent a stream event over 16 MiB');
  }

  /** The stream ended: an event cut inside its last line is still given, as parseSse does. */
  finish(onEvent: (data: Buffer) => boolean): void {
    const pending = this.#pending;
    this.#pending = undefined;
    if (pending !== undefined && isField(pending, 0, pending.length, DATA))
      this.#add(valueOf(pending, 0, pending.length));
    if (this.#data !== undefined) onEvent(this.#take());
  }

  #line(buffer: Buffer, start: number, end: number, onEvent: (data: Buffer) => boolean): boolean {
    if (start === end) return this.#data === undefined || onEvent(this.#take());
    if (isField(buffer, start, end, DATA)) this.#add(valueOf(buffer, start, end));
    return true;
  }

  #add(value: Buffer): void {
    if (this.#data === undefined) this.#data = value;
    else (this.#more ??= []).push(value);
    this.#dataBytes += value.length;
  }

  #take(): Buffer {
    const first = this.#data!;
    const more = this.#more;
    this.#data = undefined;
    this.#more = undefined;
    this.#dataBytes = 0;
    if (more === undefined) return first;
    const joined: Buffer[] = [first];
    for (const line of more) joined.push(NEWLINE, line);
    return Buffer.concat(joined);
  }
}

const DATA = Buffer.from('data');

/** True when the line's field name (before its first colon, or the whole line) is `name`. */
function isField(buffer: Buffer, start: number, end: number, name: Buffer): boolean {
  const length = name.length;
  if (end - start < length) return false;
  if (end - start > length && buffer[start + length] !== COLON) return false;
  for (let i = 0; i < length; i++) if (buffer[start + i] !== name[i]) return false;
  return true;
}

/** A field's value: after its colon and one space. */
function valueOf(buffer: Buffer, start: number, end: number): Buffer {
  let from = start + DATA.length + 1;
  if (from > end) return buffer.subarray(end, end);
  if (buffer[from] === SPACE) from++;
  return buffer.subarray(from, end);
}
