import type { Limiter } from '../core/rate-limits.ts';
import { GatewayError } from '../core/gateway-error.ts';
import type { Clock } from '../core/ids.ts';
import { addressGroup } from '../shared/address-group.ts';

/** Sign-up and verification attempts allowed per client address per minute. */
const SIGNUPS_PER_MINUTE = 20;

/** Throttles the unauthenticated account routes (register, verify, reset) per client address (an IPv6 /64). */
export class SignupGuard {
  readonly #limiter: Limiter;
  readonly #clock: Clock;
  #attempts = 0;

  constructor(limiter: Limiter, clock: Clock) {
    this.#limiter = limiter;
    this.#clock = clock;
  }

  /** Counts one attempt from `ip`; refuses (429 with Retry-After) an address past its minute's share. */
  async check(ip: string): Promise<void> {
    const admission = await this.#limiter.admit({
      subject: `ip:${addressGroup(ip)}`,
      requestId: `signup-${this.#attempts++}`,
      limits: { requestsPerMinute: SIGNUPS_PER_MINUTE, tokensPerMinute: null, dailyTokens: null },
      tokens: 0,
      now: this.#clock(),
    });
    if (!admission.allowed) {
      throw new GatewayError(
        'rate_limit_exceeded',
        'too many sign-up attempts from this address; retry later',
        {
          ...(admission.retryAfterMs !== undefined ? { retryAfterMs: admission.retryAfterMs } : {}),
        },
      );
    }
  }
}
