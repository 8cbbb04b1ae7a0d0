export type BreakerState = 'closed' | 'open' | 'half_open';

const WINDOW = 50;

/**
 * One deployment's health: opens after `threshold` consecutive failures, lets one probe through after
 * `cooldownMs`, and closes again when the probe succeeds. Keeps a recent error rate and latency for /health.
 */
export class CircuitBreaker {
  #state: BreakerState = 'closed';
  #consecutiveFailures = 0;
  #openedAt = 0;
  #probing = false;
  #blockedUntil = 0;
  readonly #outcomes: boolean[] = [];
  #latencyMs: number | undefined;
  readonly #threshold: number;
  readonly #cooldownMs: number;

  constructor(threshold: number, cooldownMs: number) {
    this.#threshold = threshold;
    this.#cooldownMs = cooldownMs;
  }

  /** Whether a request may go to this deployment now; in half-open state only one probe at a time. */
  allow(now: number): boolean {
    if (now < this.#blockedUntil) return false;
    if (this.#state === 'closed') return true;
    if (this.#state === 'open' && now - this.#openedAt >= this.#cooldownMs) this.#state = 'half_open';
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
    this.#consecutiveFailures = 0;
    this.#probing = false;
  }

  /** Counts a failure; `retryAfterMs` (from a 429 or 503) keeps requests away that long. */
  failure(now: number, retryAfterMs?: number): void {
    this.#record(false);
    this.#consecutiveFailures += 1;
    if (retryAfterMs !== undefined) this.#blockedUntil = Math.max(this.#blockedUntil, now + retryAfterMs);
    if (this.#state === 'half_open' || this.#consecutiveFailures >= this.#threshold) {
      this.#state = 'open';
      this.#openedAt = now;
    }
    this.#probing = false;
  }

  /** A probe that ended without a verdict (the client left): let another probe through. */
  release(): void {
    this.#probing = false;
  }

  /** The circuit's state at `now` (an open one turns half-open once its cooldown is over). */
  state(now: number): BreakerState {
    if (this.#state === 'open' && now - this.#openedAt >= this.#cooldownMs) this.#state = 'half_open';
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
