import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../shared/ids.ts';
import type { Store } from '../store/store.ts';
import { StoreUnavailableError } from '../store/db.ts';

export interface Job {
  name: string;
  everyMs: number;
  /** Does one round of work; the lease is held for `leaseMs` (longer than one round takes). */
  run(): Promise<void>;
  leaseMs?: number;
}

/**
 * Runs background jobs on a timer. Each round first takes the job's lease in the store, so with several
 * instances a job runs on one of them at a time; a crashed holder's lease simply runs out.
 */
export class Scheduler {
  readonly #owner = `instance-${randomBytes(6).toString('hex')}`;
  readonly #timers: NodeJS.Timeout[] = [];
  readonly #running = new Set<Promise<unknown>>();
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #stopped = false;

  constructor(store: Store, clock: Clock, logger: Logger) {
    this.#store = store;
    this.#clock = clock;
    this.#logger = logger;
  }

  start(jobs: readonly Job[]): void {
    for (const job of jobs) {
      const tick = (): void => {
        if (this.#stopped) return;
        const round = this.runOnce(job).finally(() => this.#running.delete(round));
        this.#running.add(round);
      };
      const timer = setInterval(tick, job.everyMs);
      timer.unref();
      this.#timers.push(timer);
      setImmediate(tick);
    }
  }

  /** One round of a job, if this instance gets its lease; errors are logged, never thrown. */
  async runOnce(job: Job): Promise<boolean> {
    const now = this.#clock();
    try {
      const leased = await this.#store.system.acquireLease(
        job.name,
        this.#owner,
        now,
        now + (job.leaseMs ?? job.everyMs),
      );
      if (!leased) return false;
      await job.run();
      return true;
    } catch (error) {
      // An unreachable database is logged once per outage by the store; the job runs again next time.
      if (!(error instanceof StoreUnavailableError))
        this.#logger.error({ err: error, job: job.name }, 'background job failed');
      return false;
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const timer of this.#timers) clearInterval(timer);
    await Promise.all(this.#running);
  }
}

const DAY_MS = 86_400_000;
const RETENTION_BATCH = 5_000;

/** Deletes usage records past retention, a batch at a time; the daily rollups stay. */
export function createRetentionJob(store: Store, clock: Clock, retentionDays: number, logger: Logger): Job {
  return {
    name: 'usage-retention',
    everyMs: 60 * 60_000,
    leaseMs: 10 * 60_000,
    async run() {
      const cutoff = clock() - retentionDays * DAY_MS;
      let deleted = 0;
      for (;;) {
        const batch = await store.usage.deleteRecordsBefore(cutoff, RETENTION_BATCH);
        deleted += batch;
        if (batch < RETENTION_BATCH) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
      if (deleted > 0)
        logger.info(
          { deleted, cutoff: new Date(cutoff).toISOString() },
          'usage records past retention deleted',
        );
    },
  };
}

/** Releases holds whose request can no longer settle (its instance died mid-request). */
export function createHoldRecoveryJob(store: Store, clock: Clock, logger: Logger): Job {
  return {
    name: 'hold-recovery',
    everyMs: 60_000,
    async run() {
      const released = await store.ledger.releaseExpiredHolds(clock());
      if (released > 0) logger.warn({ released }, 'released expired holds');
    },
  };
}
