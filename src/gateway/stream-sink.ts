/** Where a streamed answer goes: the HTTP layer's SSE writer, or anything else that can take text. */
export interface StreamSink {
  /** Sends the status line and headers; nothing may be retried after this. */
  open(headers: Record<string, string>): void;
  /** Writes one piece; false when the client is not keeping up (await drain). Nothing once ended or closed. */
  write(data: string): boolean;
  /**
   * Waits until the client has taken what was written. A client that has not caught up after `timeoutMs` is cut
   * off (the sink closes): one that stops reading can hold neither memory nor the upstream call for long.
   */
  drain(timeoutMs: number): Promise<void>;
  /** Ends the answer; safe to call more than once and after the client has gone. */
  end(): void;
  /** True once the client has gone. */
  readonly closed: boolean;
  onClose(listener: () => void): void;
}
