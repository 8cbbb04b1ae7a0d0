import { appendFileSync, existsSync, readFileSync, rmSync } from 'node:fs';
import type { Logger } from 'pino';
import type { LedgerRepo } from '../store/ledger-repo.ts';
import type { Settlement } from '../store/records.ts';

const MAX_BATCH = 256;
const RETRY_MS = 500;

/**
 * Settles finished requests off the response path: everything queued in one event-loop turn is written in
 * one transaction (group commit), and the next batch gathers while that one commits. A failed batch stays
 * queued and is retried; on close, whatever the database will not take is written to a spool file that the
 * next start replays (settlement is idempotent by request id), so an orderly stop loses nothing.
 */
export class SettlementQueue {
  #pending: Settlement[] = [];
  #running: Promise<void> | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  readonly #ledger: LedgerRepo;
  readonly #logger: Logger;
  readonly #spoolPath: string | undefined;
  /** Called after each committed batch (the hold book releases the batch's holds). */
  onSettled: ((batch: readonly Settlement[]) => void) | undefined;

  constructor(ledger: LedgerRepo, logger: Logger, spoolPath?: string) {
    this.#ledger = ledger;
    this.#logger = logger;
    this.#spoolPath = spoolPath;
  }

  get pending(): number {
    return this.#pending.length;
  }

  add(settlement: Settlement): void {
    this.#pending.push(settlement);
    if (!this.#running && !this.#retryTimer) this.#running = this.#run();
  }

  /** Resolves once everything queued before the call is committed (or is being retried). */
  async flush(): Promise<void> {
    while (this.#running) await this.#running;
    if (this.#pending.length > 0) {
      this.#clearRetry();
      this.#running = this.#run();
      await this.#running;
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
    if (this.#pending.length > 0 && this.#spoolPath) {
      appendFileSync(this.#spoolPath, this.#pending.map((s) => JSON.stringify(s)).join('\n') + '\n');
      this.#logger.error(
        { count: this.#pending.length, spool: this.#spoolPath },
        'settlements spooled to disk; they are applied at the next start',
      );
      this.#pending = [];
    }
  }

  async #run(): Promise<void> {
    // Yield one turn so that requests finishing together share a transaction.
    await new Promise<void>((resolve) => setImmediate(resolve));
    try {
      while (this.#pending.length > 0) {
        const batch = this.#pending.slice(0, MAX_BATCH);
        try {
          await this.#ledger.settle(batch);
        } catch (error) {
          this.#logger.error({ err: error, count: batch.length }, 'settlement batch failed; retrying');
          this.#retryTimer = setTimeout(() => {
            this.#retryTimer = undefined;
            if (!this.#running) this.#running = this.#run();
          }, RETRY_MS);
          return;
        }
        this.#pending.splice(0, batch.length);
        this.onSettled?.(batch);
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
