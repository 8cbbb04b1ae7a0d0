import type { Limiter } from '../core/rate-limits.ts';
import { addressGroup } from '../shared/address-group.ts';
import { GatewayError } from '../core/gateway-error.ts';
import type { Clock } from '../core/ids.ts';

/** Failed key authentications (unknown keys, a wrong admin key) allowed per client address per minute. */
export const AUTH_FAILURES_PER_MINUTE = 30;
/** Past this many blocked addresses, expired blocks are swept before a new one is noted. */
const SWEEP_AT = 10_000;

/**
 * Throttles guessing of API keys and the admin key per client address (an IPv6 /64). Only failures are
 * counted, in the shared limiter (so every instance sees them); an address past its share is then refused
 * here, from memory, before its next guess reaches the store. A key already in the cache never gets here,
 * so valid keys pay nothing.
 */
export class FailedAuthThrottle {
  readonly #limiter: Limiter;
  readonly #clock: Clock;
  readonly #perMinute: number;
  /** Blocked address groups and until when (ms). */
  readonly #blocked = new Map<string, number>();
  #failures = 0;

  constructor(limiter: Limiter, clock: Clock, perMinute = AUTH_FAILURES_PER_MINUTE) {
    this.#limiter = limiter;
    this.#clock = clock;
    this.#perMinute = perMinute;
  }

  /** Refuses (429 with Retry-After) an address that is blocked for guessing; costs a map lookup. */
  refuseIfBlocked(ip: string): void {
    if (this.#blocked.size === 0) return;
    const group = addressGroup(ip);
    const until = this.#blocked.get(group);
    if (until === undefined) return;
    const now = this.#clock();
    if (until <= now) this.#blocked.delete(group);
    else throw refusal(until - now);
  }

  /** Counts a failed authentication from `ip`; past the address's share it is refused (429) and blocked. */
  async failed(ip: string): Promise<void> {
    const group = addressGroup(ip);
    const now = this.#clock();
    const admission = await this.#limiter.admit({
      subject: `auth-failure:${group}`,
      requestId: `auth-failure-${this.#failures++}`,
      limits: { requestsPerMinute: this.#perMinute, tokensPerMinute: null, dailyTokens: null },
      tokens: 0,
      now,
    });
    if (admission.allowed || admission.reason === 'unavailable') return;
    const waitMs = Math.max(1_000, admission.retryAfterMs ?? 60_000);
    if (this.#blocked.size >= SWEEP_AT)
      for (const [key, until] of this.#blocked) if (until <= now) this.#blocked.delete(key);
    this.#blocked.set(group, now + waitMs);
    throw refusal(waitMs);
  }
}

const refusal = (retryAfterMs: number): GatewayError =>
  new GatewayError(
    'rate_limit_exceeded',
    'too many failed authentications from this address; retry after the Retry-After delay',
    { retryAfterMs },
  );
