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
  /** The text of the chunk's content deltas, for metering when the upstream sends no usage. */
  readonly text: string;

  constructor(
    bytes: Buffer,
    modelStart: number,
    modelEnd: number,
    usageStart: number,
    usageEnd: number,
    text: string,
  ) {
    this.bytes = bytes;
    this.modelStart = modelStart;
    this.modelEnd = modelEnd;
    this.usageStart = usageStart;
    this.usageEnd = usageEnd;
    this.text = text;
  }
}

/** One chunk of a pass-through stream: raw bytes on the common path, a parsed chunk where one had to be parsed. */
export type PassChunk = RawChunk | ChatChunk;
