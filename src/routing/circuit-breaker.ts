export type BreakerState = 'closed' | 'open' | 'half_open';

const WINDOW = 50;

/**
 * One deployment's health: opens after `threshold` consecutive upstream failures that more than one account
 * met, lets one probe through after `cooldownMs`, and closes again when the probe succeeds. Keeps a recent error
 * rate and latency for /health.
 *
 * Each account's failures in a run (the failures since the last success) count up to half the threshold
 * (rounded up), so one account alone, whatever it sends, never opens a circuit that other accounts share: a
 * dead upstream fails everyone's requests and opens it as soon as two accounts have met `threshold` failures
 * between them. Half-open, it opens again once probes of two accounts failed, so one account's requests failing
 * every probe cannot keep it open either. A failure with no account (a caller the router cannot name) counts as
 * an account of its own.
 */
export class CircuitBreaker {
  #state: BreakerState = 'closed';
  /** The current run's failures by account, and their sum with each account's share capped. */
  readonly #run = new Map<string, number>();
  #runWeight = 0;
  #anonymous = 0;
  #openedAt = 0;
  #probing = false;
  #blockedUntil = 0;
  readonly #outcomes: boolean[] = [];
  #latencyMs: number | undefined;
  readonly #threshold: number;
  readonly #cooldownMs: number;

  readonly #perAccount: number;

  constructor(threshold: number, cooldownMs: number) {
    this.#threshold = threshold;
    this.#cooldownMs = cooldownMs;
    this.#perAccount = Math.ceil(threshold / 2);
  }

  /** Whether a request may go to this deployment now; in half-open state only one probe at a time. */
  allow(now: number): boolean {
    if (now < this.#blockedUntil) return false;
    if (this.#state === 'closed') return true;
    this.#cool(now);
    if (this.#state === 'half_open' && !this.#probing) {
      this.#probing = true;
      return true;
    }
    return false;
  }

  success(latencyMs: number): void {
    this.#record(true);
    this.#latencyMs = this.#latencyMs === undefined ? latencyMs : this.#latencyMs * 0.8 + latencyMs * 0.2;
    this.#state = 'closed';
    this.#endRun();
    this.#probing = false;
  }

  /**
   * Counts an upstream failure met by `account`'s request; `retryAfterMs` (from a 429 or 503) keeps requests
   * away that long.
   */
  failure(now: number, retryAfterMs?: number, account?: string): void {
    this.#record(false);
    const who = account ?? `\u0000anonymous ${++this.#anonymous}`;
    const count = (this.#run.get(who) ?? 0) + 1;
    this.#run.set(who, count);
    if (count <= this.#perAccount) this.#runWeight += 1;
    if (retryAfterMs !== undefined) this.#blockedUntil = Math.max(this.#blockedUntil, now + retryAfterMs);
    // Half-open, the probes that failed since form the run: it opens again once probes of two accounts failed
    // (one when the threshold is 1), so one account's request failing its probe cannot keep it open by itself.
    const reopen = this.#state === 'half_open' && this.#run.size >= Math.min(2, this.#threshold);
    if (reopen || this.#runWeight >= this.#threshold) {
      this.#state = 'open';
      this.#openedAt = now;
      this.#endRun();
    }
    this.#probing = false;
  }

  /** An open circuit whose cooldown is over turns half-open, with a run of its own probes. */
  #cool(now: number): void {
    if (this.#state !== 'open' || now - this.#openedAt < this.#cooldownMs) return;
    this.#state = 'half_open';
    this.#endRun();
  }

  #endRun(): void {
    this.#run.clear();
    this.#runWeight = 0;
  }

  /** A probe that ended without a verdict (the client left): let another probe through. */
  release(): void {
    this.#probing = false;
  }

  /** The circuit's state at `now` (an open one turns half-open once its cooldown is over). */
  state(now: number): BreakerState {
    this.#cool(now);
    return this.#state;
  }

  snapshot(now: number): {
    state: BreakerState;
    error_rate: number;
    latency_ms: number | null;
    blocked_for_ms: number;
  } {
    const state = this.state(now);
    const failures = this.#outcomes.filter((ok) => !ok).length;
    return {
      state,
      error_rate:
        this.#outcomes.length === 0 ? 0 : Math.round((failures / this.#outcomes.length) * 1000) / 1000,
      latency_ms: this.#latencyMs === undefined ? null : Math.round(this.#latencyMs * 10) / 10,
      blocked_for_ms: Math.max(0, this.#blockedUntil - now),
    };
  }

  #record(ok: boolean): void {
    this.#outcomes.push(ok);
    if (this.#outcomes.length > WINDOW) this.#outcomes.shift();
  }
}
