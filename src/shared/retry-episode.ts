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
  /**
   * The outage is announced where it is detected (the store logs one line when the database goes and one
   * when it returns): an episode of outage errors alone is then logged at debug, not a second time at warn.
   */
  outageLoggedElsewhere?: boolean;
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
  /** Whether this episode's beginning was logged above debug (its end is then logged too). */
  #loud = false;
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
      this.#report?.failing(this.#o.loop, true);
    }
    // An error of its own is logged even if the episode began as an outage announced elsewhere.
    if (!this.#loud) {
      const entry = { err: error, loop: this.#o.loop, ...fields };
      const message = `${this.#o.message}; retrying with backoff`;
      if (!outage) this.#o.logger.error(entry, message);
      else if (!this.#o.outageLoggedElsewhere) this.#o.logger.warn(entry, message);
      else if (this.#failures === 0) this.#o.logger.debug(entry, message);
      this.#loud = !outage || !this.#o.outageLoggedElsewhere;
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
    const entry = { loop: this.#o.loop, tries: this.#failures, failingMs: now() - this.#since, ...fields };
    const message = this.#o.recovered ?? `${this.#o.message}: succeeds again`;
    if (this.#loud) this.#o.logger.info(entry, message);
    else this.#o.logger.debug(entry, message);
    this.#failures = 0;
    this.#loud = false;
    this.#report?.failing(this.#o.loop, false);
  }
}
