import { ProviderError } from './provider.ts';

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
