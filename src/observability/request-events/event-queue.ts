/**
 * Sends one batch of serialized events: `sent`; `retry` (or a rejection) when another attempt may succeed;
 * `rejected` when the receiver refused it for good (a 4xx).
 */
export type BatchSender = (lines: readonly string[]) => Promise<'sent' | 'retry' | 'rejected'>;

export interface EventQueueOptions {
  send: BatchSender;
  batchSize: number;
  maxQueue: number;
  intervalMs: number;
  maxAttempts: number;
  /** Events pushed out by a full queue, or dropped after their batch's last attempt. */
  onDropped(count: number, reason: 'queue_full' | 'send_failed'): void;
  /** Delay before retry `attempt` (1-based); exponential by default. */
  retryDelayMs?: (attempt: number) => number;
}

/**
 * A bounded queue of events sent in batches, one batch in flight at a time: a full queue drops its oldest events
 * (counted), so a slow or absent receiver costs a bounded amount of memory and never holds a request.
 */
export class EventQueue {
  readonly #o: EventQueueOptions;
  #queue: string[] = [];
  #timer: NodeJS.Timeout | undefined;
  #sending: Promise<void> | undefined;
  #closed = false;

  constructor(options: EventQueueOptions) {
    this.#o = options;
  }

  get length(): number {
    return this.#queue.length;
  }

  add(line: string): void {
    if (this.#closed) return;
    this.#queue.push(line);
    if (this.#queue.length > this.#o.maxQueue) {
      const excess = this.#queue.length - this.#o.maxQueue;
      this.#queue.splice(0, excess);
      this.#o.onDropped(excess, 'queue_full');
    }
    if (this.#queue.length >= this.#o.batchSize) this.#kick();
    else this.#timer ??= setTimeout(() => this.#kick(), this.#o.intervalMs).unref();
  }

  /** Sends everything queued (each batch tried as usual), then takes no more. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    while (this.#sending || this.#queue.length > 0) {
      this.#sending ??= this.#drain();
      await this.#sending;
    }
  }

  #kick(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#sending ??= this.#drain();
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, this.#o.batchSize);
        await this.#sendWithRetry(batch);
        if (!this.#closed && this.#queue.length < this.#o.batchSize) break;
      }
    } finally {
      this.#sending = undefined;
      if (this.#queue.length > 0 && !this.#closed)
        this.#timer ??= setTimeout(() => this.#kick(), this.#o.intervalMs).unref();
    }
  }

  async #sendWithRetry(batch: string[]): Promise<void> {
    const delay = this.#o.retryDelayMs ?? ((attempt: number) => Math.min(30_000, 250 * 2 ** (attempt - 1)));
    for (let attempt = 1; attempt <= this.#o.maxAttempts; attempt++) {
      const outcome = await this.#o.send(batch).catch(() => 'retry' as const);
      if (outcome === 'sent') return;
      if (outcome === 'rejected') break;
      if (attempt < this.#o.maxAttempts && !this.#closed)
        await new Promise((resolve) => setTimeout(resolve, delay(attempt)).unref());
      else if (this.#closed) break;
    }
    this.#o.onDropped(batch.length, 'send_failed');
  }
}
