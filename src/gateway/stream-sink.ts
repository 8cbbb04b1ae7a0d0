/** Where a streamed answer goes: the HTTP layer's SSE writer, or anything else that can take text. */
export interface StreamSink {
  /** Sends the status line and headers; nothing may be retried after this. */
  open(headers: Record<string, string>): void;
  /** Writes one piece; false when the client is not keeping up (await drain). */
  write(data: string): boolean;
  drain(): Promise<void>;
  end(): void;
  /** True once the client has gone. */
  readonly closed: boolean;
  onClose(listener: () => void): void;
}
