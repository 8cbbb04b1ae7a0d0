import { isUtf8 } from 'node:buffer';
import type { ChatChunk } from '../../core/chat-types.ts';
import { type PassChunk, RawChunk } from '../../core/raw-chunk.ts';
import type { StreamEvent } from '../../core/stream-event.ts';
import { DONE, type EventChunks } from '../upstream-http.ts';
import type { EventDecoder } from '../event-batches.ts';
import { lastTextDelta, textDeltaStart } from './text-delta.ts';

/**
 * The pass-through fast path of a Messages API stream, for a client that speaks chat completions: each event
 * becomes the chat-completion chunks the canonical path would write for it (chatCompletionsSink's `events`), byte
 * for byte, made here as chunks the front door copies. A text delta in Anthropic's own form (the bulk of a stream)
 * is read off its bytes (textDeltaStart) and made into a raw chunk at once: the chunk's start (id, created, the
 * model to be replaced) is made once per stream, and its text is the event's own JSON-escaped bytes, copied.
 * Every other event goes through the canonical decoder (anthropicDecoder), whose events are then made into chunks:
 * raw ones for the role, text and finish chunks, parsed ones (ChatChunk) for tool calls and the usage, which the
 * gateway meters from their fields. So the translation, the metering and the client's bytes are the canonical
 * path's; only the objects and the async steps between them are gone.
 */
export function anthropicChunks(decoder: EventDecoder): EventChunks {
  /** The chunks' common start, `{"id":…,"object":…,"created":…,"model":"","choices":[{"index":0,"delta":`. */
  let head: Buffer | undefined;
  let headText = '';
  let id = '';
  let created = 0;
  /** Where the `""` standing for the model is in `head`. */
  let modelStart = 0;
  const events: StreamEvent[] = [];

  const begin = (startId: string, startCreated: number): Buffer => {
    id = startId;
    created = startCreated;
    const before = `{"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${created},"model":`;
    modelStart = Buffer.byteLength(before);
    headText = `${before}"","choices":[{"index":0,"delta":`;
    return (head = Buffer.from(headText));
  };
  /** A raw chunk: the head and `tail`, with the text between `textFrom` and `textTo` of the tail, if any. */
  const raw = (tail: string, textFrom = -1, textTo = -1, escaped = false): RawChunk => {
    const bytes = Buffer.from(headText + tail);
    const base = head!.length;
    return new RawChunk(
      bytes,
      modelStart,
      modelStart + 2,
      -1,
      -1,
      textFrom < 0 ? -1 : base + textFrom,
      textTo < 0 ? -1 : base + textTo,
      escaped,
    );
  };
  const parsed = (choices: ChatChunk['choices'], usage?: ChatChunk['usage']): ChatChunk => {
    const chunk: ChatChunk = { id, object: 'chat.completion.chunk', created, model: '', choices };
    if (usage !== undefined) chunk.usage = usage;
    return chunk;
  };

  /** The canonical events of one event as chunks (chatCompletionsSink's `events`, one to one). */
  const chunkOf = (event: StreamEvent): PassChunk | undefined => {
    if (event.type === 'start') begin(event.id, event.created);
    else if (head === undefined) begin('', Math.floor(Date.now() / 1000));
    switch (event.type) {
      case 'start':
        return raw(ROLE_TAIL);
      case 'text': {
        // The text's bytes lie between the quotes of its JSON string, which starts 11 bytes into the tail.
        const json = JSON.stringify(event.text);
        const quoteAt = 11 + Buffer.byteLength(json) - 1;
        return raw(`{"content":${json}}${OPEN_CHOICE_END}`, 12, quoteAt, json.includes('\\'));
      }
      case 'tool': {
        const call =
          event.id === undefined
            ? { index: event.index, function: { arguments: event.args } }
            : {
                index: event.index,
                id: event.id,
                type: 'function' as const,
                function: { name: event.name ?? '', arguments: event.args },
              };
        return parsed([{ index: 0, delta: { tool_calls: [call] }, finish_reason: null }]);
      }
      case 'finish':
        return raw(`{},"finish_reason":"${event.reason}"}]}`);
      case 'usage':
        return parsed([], event.usage);
    }
  };

  return (data, out) => {
    const start = textDeltaStart(data);
    if (start >= 0 && head !== undefined) {
      const end = data.length - TEXT_DELTA_END;
      // Non-ASCII text is copied only when it is valid UTF-8 (else the canonical decoding replaces what is not).
      if (!lastTextDelta.nonAscii || isUtf8(data.subarray(start, end))) return textChunk(data, start, end);
    }
    const done = decoder.event(data, events);
    for (let i = 0; i < events.length; i++) {
      const chunk = chunkOf(events[i]!);
      if (chunk !== undefined) out.push(chunk);
    }
    events.length = 0;
    return done ? DONE : undefined;
  };

  /** A content chunk whose text is data[start, end), as escaped in the event (no backslash in it). */
  function textChunk(data: Buffer, start: number, end: number): RawChunk {
    const h = head!;
    const length = end - start;
    const textStart = h.length + CONTENT_OPEN.length;
    const bytes = Buffer.allocUnsafe(textStart + length + CONTENT_CLOSE.length);
    // The pieces are a few dozen bytes: a loop costs less than a native copy's call.
    let at = 0;
    for (let i = 0; i < h.length; i++) bytes[at++] = h[i]!;
    for (let i = 0; i < CONTENT_OPEN.length; i++) bytes[at++] = CONTENT_OPEN[i]!;
    if (length > 64) at += data.copy(bytes, at, start, end);
    else for (let i = start; i < end; i++) bytes[at++] = data[i]!;
    for (let i = 0; i < CONTENT_CLOSE.length; i++) bytes[at++] = CONTENT_CLOSE[i]!;
    return new RawChunk(bytes, modelStart, modelStart + 2, -1, -1, textStart, textStart + length, false);
  }
}

/** The end of a chunk's one choice that has not finished, and of the chunk. */
const OPEN_CHOICE_END = ',"finish_reason":null}]}';
const ROLE_TAIL = `{"role":"assistant","content":""}${OPEN_CHOICE_END}`;
const CONTENT_OPEN = Buffer.from('{"content":"');
const CONTENT_CLOSE = Buffer.from(`"}${OPEN_CHOICE_END}`);
/** A text delta event's bytes after its text: `"}}`. */
const TEXT_DELTA_END = 3;
