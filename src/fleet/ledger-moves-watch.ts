import type { Logger } from 'pino';
import type { FleetRepo } from '../store/fleet-repo.ts';

/** How often the moves are read, how far back each read looks (commits land after their stamp), and how long they are kept. */
const POLL_MS = 1_000;
// A move is stamped when its trigger fires, and is seen when its transaction commits: a minute covers any
// transaction but a stuck one, whose account's next settlement finds the version gap and reads the balance again.
const OVERLAP_MS = 60_000;
const KEEP_MS = 3_600_000;

/**
 * Balances kept outside the database (Redis holds) learn of every change another writer made to an account's
 * spendable credit: an older release's charge, a grant, an operator's change. The database's triggers list them
 * (ledger_moves, PostgreSQL); each second this reads the new ones and has the copy forgotten when it predates
 * the move, so the next hold reads the balance again.
 */
export class LedgerMovesWatch {
  readonly #fleet: FleetRepo;
  readonly #forget: (accountId: string, version: number) => Promise<void>;
  readonly #logger: Logger;
  #cursor: number | undefined;
  readonly #applied = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #failing = false;
  #rounds = 0;

  constructor(options: {
    fleet: FleetRepo;
    forget: (accountId: string, version: number) => Promise<void>;
    logger: Logger;
  }) {
    this.#fleet = options.fleet;
    this.#forget = options.forget;
    this.#logger = options.logger;
  }

  start(everyMs: number = POLL_MS): void {
    this.#timer = setInterval(() => {
      this.#running ??= this.poll().finally(() => (this.#running = undefined));
    }, everyMs);
    this.#timer.unref();
  }

  /** One read: forgets the copies of every account moved since the last read. */
  async poll(): Promise<void> {
    try {
      this.#cursor ??= (await this.#fleet.databaseNow()) - OVERLAP_MS;
      const moves = await this.#fleet.ledgerMovedSince(this.#cursor - OVERLAP_MS);
      for (const move of moves) {
        if ((this.#applied.get(move.accountId) ?? -1) >= move.version) continue;
        await this.#forget(move.accountId, move.version);
        this.#applied.set(move.accountId, move.version);
        this.#cursor = Math.max(this.#cursor, move.at);
      }
      if (this.#applied.size > 100_000) this.#applied.clear();
      if (++this.#rounds % 600 === 0) await this.#fleet.pruneLedgerMoves(this.#cursor - KEEP_MS);
      if (this.#failing) this.#logger.info('ledger moves are read again');
      this.#failing = false;
    } catch (error) {
      if (!this.#failing)
        this.#logger.warn(
          { err: error },
          'ledger moves of other writers cannot be read; trying again each second',
        );
      this.#failing = true;
    }
  }

  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    await this.#running;
  }
}
