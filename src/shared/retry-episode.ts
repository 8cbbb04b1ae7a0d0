import type { Logger } from 'pino';

/** Growing delays between tries: `initialMs`, doubling, never above `maxMs`, each with jitter. */
export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
}

/**
 * The wait before try number `attempt` + 1 (attempt 0 is the first retry): an exponential ceiling, capped, of
 * which a random half is waited ("equal jitter"), so instances that failed together do not retry together
 * while none waits less than half the ceiling.
 */
export function backoffDelay(
  attempt: number,
  policy: BackoffPolicy,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.maxMs, policy.initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** Where retries are counted (the Prometheus metric), by the loop's name. */
export interface RetryReport {
  /** One failed try that will be tried again. */
  retried(loop: string): void;
  /** An episode of failures began (true) or ended (false). */
  failing(loop: string, failing: boolean): void;
}

export interface RetryEpisodeOptions {
  /** The loop's name in logs and in the metric's `loop` label. */
  loop: string;
  logger: Logger;
  policy: BackoffPolicy;
  report?: RetryReport | undefined;
  /** What the warning says when an episode begins (the loop's own words). */
  message: string;
  /** What the info line says when it ends; by default the message followed by "again succeeds". */
  recovered?: string;
  random?: () => number;
  now?: () => number;
}

/**
 * One retry loop's state: a run of failures is an episode, logged once at warn when it begins (with the first
 * error) and once at info when a try succeeds again; each failed try is counted and answered with the next
 * delay of the backoff. An error that is not an outage (a script or a query that fails by itself) is logged
 * at error, as it will not go away without someone looking.
 */
export class RetryEpisode {
  readonly #o: RetryEpisodeOptions;
  #failures = 0;
  #since = 0;
  #report: RetryReport | undefined;

  constructor(options: RetryEpisodeOptions) {
    this.#o = options;
    this.#report = options.report;
  }

  /** Counts from now on in `report` (for loops built before the metrics are). */
  set report(report: RetryReport | undefined) {
    this.#report = report;
  }

  get failing(): boolean {
    return this.#failures > 0;
  }

  /** Failed tries in the current episode. */
  get failures(): number {
    return this.#failures;
  }

  /**
   * A try failed: logs the episode's beginning, counts the retry, and returns how long to wait before the next
   * try. `outage` says the error is a backing service being away (warn) rather than an error of its own (error).
   */
  failed(error: unknown, outage: boolean, fields: Record<string, unknown> = {}): number {
    const now = this.#o.now ?? Date.now;
    if (this.#failures === 0) {
      this.#since = now();
      const entry = { err: error, loop: this.#o.loop, ...fields };
      if (outage) this.#o.logger.warn(entry, `${this.#o.message}; retrying with backoff`);
      else this.#o.logger.error(entry, `${this.#o.message}; retrying with backoff`);
      this.#report?.failing(this.#o.loop, true);
    }
    const delay = backoffDelay(this.#failures, this.#o.policy, this.#o.random);
    this.#failures++;
    this.#report?.retried(this.#o.loop);
    return delay;
  }

  /** A try succeeded: ends the episode (logged once) if one was under way. */
  succeeded(fields: Record<string, unknown> = {}): void {
    if (this.#failures === 0) return;
    const now = this.#o.now ?? Date.now;
    this.#o.logger.info(
      { loop: this.#o.loop, tries: this.#failures, failingMs: now() - this.#since, ...fields },
      this.#o.recovered ?? `${this.#o.message}: succeeds again`,
    );
    this.#failures = 0;
    this.#report?.failing(this.#o.loop, false);
  }
}
