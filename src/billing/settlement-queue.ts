import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import type { LedgerRepo, SettledAccounts } from '../store/ledger-repo.ts';
import { type DbCapabilities, StoreUnavailableError } from '../store/db.ts';
import type { Settlement } from '../core/records.ts';
import { RetryEpisode, type RetryReport } from '../shared/retry-episode.ts';

/**
 * The most settlements one commit takes. PostgreSQL settles a batch in a fixed number of set-based statements,
 * so a larger batch costs little more than a small one (docs/performance.md, settlement); SQLite settles row by
 * row on the event loop, where a larger batch holds the loop longer.
 */
export function settlementBatchSize(capabilities: DbCapabilities): number {
  return capabilities.setBasedSettlement ? 1024 : 256;
}
/** The first wait before a failed batch is tried again; it doubles (with jitter) up to RETRY_MAX_MS. */
const RETRY_MS = 250;
const RETRY_MAX_MS = 5_000;
/** How long a batch gathers before it commits, unless it fills first. */
export const SETTLEMENT_WINDOW_MS = 10;

export interface SettlementQueueOptions {
  /** Where settlements go when the database refuses them at shutdown; replayed at the next start. */
  spoolPath?: string | undefined;
  /** Whether holds are rows in the store that each settlement deletes (PostgreSQL), or live in this process. */
  holdRows?: boolean;
  /** The gathering window; 0 commits on the next event-loop turn. */
  windowMs?: number;
  /** The first wait before a failed batch is tried again (it grows while the batches keep failing). */
  retryMs?: number;
  /** Where the retries are counted. */
  retryReport?: RetryReport;
  /** The most settlements one commit takes (`settlementBatchSize` of the store); 256 when unset. */
  maxBatch?: number;
}

/**
 * Settles finished requests off the response path. Settlements gather for a short window (or until a
 * batch is full) and commit in one transaction (group commit): a commit's fixed cost, not the records,
 * dominates at small batches (about 50 µs on SQLite for one record, 7 µs each in batches of 256), and a
 * commit that happens to land while a request arrives delays that request. A failed batch stays queued and
 * is retried; on close, whatever the database will not take is written to a spool file that the next start
 * replays (settlement is idempotent by request id), so an orderly stop loses nothing.
 */
export class SettlementQueue {
  #pending: Settlement[] = [];
  #running: Promise<void> | undefined;
  #gatherTimer: NodeJS.Timeout | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  readonly #ledger: LedgerRepo;
  readonly #logger: Logger;
  readonly #spoolPath: string | undefined;
  readonly #holdRows: boolean;
  readonly #windowMs: number;
  readonly #maxBatch: number;
  /** While batches fail (their settlements wait in memory and are retried with backoff). */
  readonly #retry: RetryEpisode;
  /** Called after each committed batch (the hold book releases the batch's holds), with what it charged. */
  onSettled: ((batch: readonly Settlement[], charged: SettledAccounts) => void) | undefined;

  constructor(ledger: LedgerRepo, logger: Logger, options: SettlementQueueOptions = {}) {
    this.#ledger = ledger;
    this.#logger = logger;
    this.#spoolPath = options.spoolPath;
    this.#holdRows = options.holdRows ?? true;
    this.#windowMs = options.windowMs ?? SETTLEMENT_WINDOW_MS;
    this.#maxBatch = options.maxBatch ?? 256;
    this.#retry = new RetryEpisode({
      loop: 'settlements',
      logger,
      policy: { initialMs: options.retryMs ?? RETRY_MS, maxMs: Math.max(options.retryMs ?? 0, RETRY_MAX_MS) },
      report: options.retryReport,
      outageLoggedElsewhere: true,
      message: 'settlement batches fail; their settlements wait in memory',
      recovered: 'settlements commit again',
    });
  }

  /** Counts the retries in the metric (the queue is built before the metrics are handed out). */
  set retryReport(report: RetryReport) {
    this.#retry.report = report;
  }

  /**
   * The database answers again: a batch waiting out its backoff is tried now rather than when its timer ends.
   */
  retryNow(): void {
    if (!this.#retryTimer) return;
    this.#clearRetry();
    void this.#commitNow();
  }

  get pending(): number {
    return this.#pending.length;
  }

  add(settlement: Settlement): void {
    this.#pending.push(settlement);
    if (this.#running || this.#retryTimer) return;
    if (this.#pending.length >= this.#maxBatch) void this.#commitNow();
    else this.#gatherTimer ??= setTimeout(this.#commitGathered, this.#windowMs);
  }

  /** Resolves once everything queued before the call is committed (or is being retried). */
  async flush(): Promise<void> {
    while (this.#running) await this.#running;
    if (this.#pending.length > 0) {
      this.#clearRetry();
      await this.#commitNow();
    }
  }

  /**
   * Applies settlements a previous process spooled; call once at start. The claimed file is removed only
   * once all of it has committed, and a claimed file left by a crash is read again (settlement is idempotent).
   */
  async replaySpool(): Promise<number> {
    if (!this.#spoolPath) return 0;
    const claimed = `${this.#spoolPath}.replaying`;
    if (existsSync(this.#spoolPath)) appendFileSync(claimed, readFileSync(this.#spoolPath, 'utf8'));
    if (!existsSync(claimed)) return 0;
    rmSync(this.#spoolPath, { force: true });
    const lines = readFileSync(claimed, 'utf8').split('\n').filter(Boolean);
    for (const line of lines) this.#pending.push(JSON.parse(line) as Settlement);
    await this.flush();
    if (this.#pending.length === 0) rmSync(claimed);
    return lines.length;
  }

  /** Flushes; what still cannot be written goes to the spool file. */
  async close(): Promise<void> {
    this.#clearRetry();
    await this.flush();
    this.#clearRetry(); // a batch that failed just now would be retried after the store has closed
    this.spoolNow();
  }

  /**
   * Writes what waits to the spool file now, synchronously (a forced exit calls it last); returns how many.
   * A batch whose commit is under way is written too: the replay of a committed settlement changes nothing.
   */
  spoolNow(): number {
    const count = this.#pending.length;
    if (count === 0 || !this.#spoolPath) return 0;
    mkdirSync(dirname(this.#spoolPath), { recursive: true });
    appendFileSync(this.#spoolPath, this.#pending.map((s) => JSON.stringify(s)).join('\n') + '\n');
    this.#logger.error(
      { count, spool: this.#spoolPath },
      'settlements spooled to disk; they are applied at the next start',
    );
    this.#pending = [];
    return count;
  }

  /** The gathering window ended: the commit starts in the timer's own callback, on nobody's stack. */
  readonly #commitGathered = (): void => {
    this.#gatherTimer = undefined;
    this.#running ??= this.#run(true);
  };

  #commitNow(): Promise<void> {
    clearTimeout(this.#gatherTimer);
    this.#gatherTimer = undefined;
    return (this.#running ??= this.#run(false));
  }

  async #run(offStack: boolean): Promise<void> {
    // Never on the caller's stack: a full batch found by `add` commits after the current response is out.
    if (!offStack) await new Promise<void>((resolve) => setImmediate(resolve));
    try {
      while (this.#pending.length > 0) {
        const batch = this.#pending.slice(0, this.#maxBatch);
        let charged: SettledAccounts;
        try {
          charged = await this.#ledger.settle(batch, { holdRows: this.#holdRows });
        } catch (error) {
          // One line per failing streak, not per retry; a batch the database refuses by itself (not an
          // outage) is an error someone must look at. The settlements wait, in memory and at shutdown in the spool.
          const delay = this.#retry.failed(error, error instanceof StoreUnavailableError, {
            pending: this.#pending.length,
          });
          this.#retryTimer = setTimeout(() => {
            this.#retryTimer = undefined;
            void this.#commitNow();
          }, delay);
          return;
        }
        this.#retry.succeeded({ pending: this.#pending.length - batch.length });
        this.#pending.splice(0, batch.length);
        this.onSettled?.(batch, charged);
      }
    } finally {
      this.#running = undefined;
    }
  }

  #clearRetry(): void {
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
  }
}
