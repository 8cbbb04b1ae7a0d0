import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../core/ids.ts';
import type { Store } from '../store/store.ts';
import { StoreUnavailableError } from '../store/db.ts';
import { DAY_MS } from '../core/time.ts';
import { RetryEpisode, type RetryReport } from '../shared/retry-episode.ts';

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
 * instances a job runs on one of them at a time; a crashed holder's lease simply runs out, and a clean stop
 * gives its leases back. A job that keeps failing skips rounds on a backoff (up to 10 times its period).
 */
export class Scheduler {
  readonly #owner = `instance-${randomBytes(6).toString('hex')}`;
  readonly #timers: NodeJS.Timeout[] = [];
  readonly #running = new Set<Promise<unknown>>();
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #retries = new Map<string, { episode: RetryEpisode; notBefore: number }>();
  #report: RetryReport | undefined;
  #stopped = false;

  constructor(store: Store, clock: Clock, logger: Logger) {
    this.#store = store;
    this.#clock = clock;
    this.#logger = logger;
  }

  /** Counts the jobs' retries in the metric. */
  set retryReport(report: RetryReport) {
    this.#report = report;
    for (const { episode } of this.#retries.values()) episode.report = report;
  }

  start(jobs: readonly Job[]): void {
    for (const job of jobs) {
      this.#retries.set(job.name, {
        notBefore: 0,
        episode: new RetryEpisode({
          loop: `job:${job.name}`,
          logger: this.#logger,
          policy: { initialMs: job.everyMs, maxMs: job.everyMs * 10 },
          report: this.#report,
          outageLoggedElsewhere: true,
          message: `background job ${job.name} fails`,
          recovered: `background job ${job.name} succeeds again`,
        }),
      });
      const tick = (): void => this.kick(job);
      const timer = setInterval(tick, job.everyMs);
      timer.unref();
      this.#timers.push(timer);
      setImmediate(tick);
    }
  }

  /** The database answers again: jobs skipping rounds on a backoff run at their next tick. */
  retryNow(): void {
    for (const retry of this.#retries.values()) retry.notBefore = 0;
  }

  /** Runs a round of the job now, besides its timer (work was just queued); stop() waits for it. */
  kick(job: Job): void {
    if (this.#stopped || this.#clock() < (this.#retries.get(job.name)?.notBefore ?? 0)) return;
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
      this.#retries.get(job.name)?.episode.succeeded();
      return true;
    } catch (error) {
      // Logged once per episode (an unreachable database also once per outage by the store); rounds are
      // skipped on a backoff meanwhile.
      const retry = this.#retries.get(job.name);
      if (retry) {
        const delay = retry.episode.failed(error, error instanceof StoreUnavailableError, { job: job.name });
        retry.notBefore = this.#clock() + delay - job.everyMs;
      } else if (!(error instanceof StoreUnavailableError))
        this.#logger.error({ err: error, job: job.name }, 'background job failed');
      return false;
    }
  }

  /**
   * Stops the timers, waits for the rounds under way (at most `waitMs`: a round stuck on an unreachable
   * database must not hold a stop), then gives back this instance's leases so another instance (or this one
   * restarted) runs the jobs at once instead of after the lease runs out.
   */
  async stop(waitMs = 10_000): Promise<void> {
    this.#stopped = true;
    for (const timer of this.#timers) clearInterval(timer);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)));
    await Promise.race([Promise.all(this.#running), timedOut]);
    clearTimeout(timer);
    await this.#store.system
      .releaseLeases(this.#owner)
      .catch((error: unknown) =>
        this.#logger.warn({ err: error }, 'could not give back the job leases; they run out instead'),
      );
  }
}

export const RETENTION_BATCH = 5_000;

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
