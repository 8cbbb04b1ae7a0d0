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
  /** Runs on every instance, without taking the job's lease (a heartbeat). */
  everyInstance?: boolean;
}

/** How long an instance's lease lasts without a heartbeat, and how often it beats. */
export const INSTANCE_LEASE_MS = 30_000;
export const HEARTBEAT_MS = 10_000;

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
      const tick = (): void => this.kick(job);
      const timer = setInterval(tick, job.everyMs);
      timer.unref();
      this.#timers.push(timer);
      setImmediate(tick);
    }
  }

  /** Runs a round of the job now, besides its timer (work was just queued); stop() waits for it. */
  kick(job: Job): void {
    if (this.#stopped) return;
    const round = this.runOnce(job).finally(() => this.#running.delete(round));
    this.#running.add(round);
  }

  /** One round of a job, if this instance gets its lease; errors are logged, never thrown. */
  async runOnce(job: Job): Promise<boolean> {
    const now = this.#clock();
    try {
      const leased =
        job.everyInstance === true ||
        (await this.#store.system.acquireLease(
          job.name,
          this.#owner,
          now,
          now + (job.leaseMs ?? job.everyMs),
        ));
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

/**
 * Releases holds whose request can no longer settle: those of instances whose lease ran out (they died: within
 * INSTANCE_LEASE_MS plus one round of this job, under a minute) and any past its own expiry.
 */
export function createHoldRecoveryJob(store: Store, clock: Clock, logger: Logger): Job {
  return {
    name: 'hold-recovery',
    everyMs: 15_000,
    async run() {
      const orphaned = await store.ledger.releaseOrphanedHolds(clock());
      if (orphaned > 0) logger.warn({ released: orphaned }, 'released the holds of instances that stopped');
      const released = await store.ledger.releaseExpiredHolds(clock());
      if (released > 0) logger.warn({ released }, 'released expired holds');
    },
  };
}

/** This instance's heartbeat on a shared database: its holds stay while its lease does. */
export function createInstanceLeaseJob(store: Store, clock: Clock, instanceId: string): Job {
  return {
    name: 'instance-lease',
    everyMs: HEARTBEAT_MS,
    everyInstance: true,
    async run() {
      const now = clock();
      await store.ledger.renewInstanceLease(instanceId, now, now + INSTANCE_LEASE_MS);
    },
  };
}
