import type { Limiter } from '../core/rate-limits.ts';
import { GatewayError } from '../core/gateway-error.ts';
import { type Clock, newId } from '../core/ids.ts';

/** Deliveries an account may ask for by hand, per minute: test events, and redeliveries. */
export const TEST_EVENTS_PER_MINUTE = 5;
export const REDELIVERIES_PER_MINUTE = 30;

/**
 * Throttles the deliveries an account asks for by hand, per account, in the shared limiter (Redis where there
 * is one, so the count holds across instances): every one is a request Tollgate sends to an address the
 * account chose, and without a bound the service becomes a reflector.
 */
export class SendThrottle {
  readonly #limiter: Limiter;
  readonly #clock: Clock;

  constructor(limiter: Limiter, clock: Clock) {
    this.#limiter = limiter;
    this.#clock = clock;
  }

  /** Counts one send of `kind` for the account; 429 with Retry-After past its minute's share. */
  async check(accountId: string, kind: 'test' | 'redeliver'): Promise<void> {
    const perMinute = kind === 'test' ? TEST_EVENTS_PER_MINUTE : REDELIVERIES_PER_MINUTE;
    const admission = await this.#limiter.admit({
      subject: `webhook-${kind}:${accountId}`,
      requestId: newId('whs'),
      limits: { requestsPerMinute: perMinute, tokensPerMinute: null, dailyTokens: null },
      tokens: 0,
      now: this.#clock(),
    });
    if (!admission.allowed)
      throw new GatewayError(
        'rate_limit_exceeded',
        kind === 'test'
          ? `at most ${perMinute} test events a minute; retry after the Retry-After delay`
          : `at most ${perMinute} redeliveries a minute; retry after the Retry-After delay`,
        admission.retryAfterMs !== undefined ? { retryAfterMs: admission.retryAfterMs } : {},
      );
  }
}
