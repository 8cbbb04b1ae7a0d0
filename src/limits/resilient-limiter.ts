import type { Logger } from 'pino';
import type { LimiterFailurePolicy } from '../config/config.ts';
import type { Admission, AdmissionRequest, Limiter } from './limiter.ts';
import { MemoryLimiter } from './memory-limiter.ts';
import type { RedisLimiter } from './redis-limiter.ts';

/**
 * Redis first; while Redis cannot be reached, the configured policy: `local` keeps per-instance limits in
 * memory (the default), `allow` admits everything, `deny` refuses with 503. Recovers by itself: each
 * admission tries Redis again as soon as its client reconnects.
 */
export class ResilientLimiter implements Limiter {
  readonly backend = 'redis';
  readonly #redis: RedisLimiter;
  readonly #local = new MemoryLimiter();
  readonly #policy: LimiterFailurePolicy;
  readonly #logger: Logger;
  #degraded = false;

  constructor(redis: RedisLimiter, policy: LimiterFailurePolicy, logger: Logger) {
    this.#redis = redis;
    this.#policy = policy;
    this.#logger = logger;
  }

  async admit(request: AdmissionRequest): Promise<Admission> {
    if (this.#redis.healthy()) {
      try {
        const admission = await this.#redis.admit(request);
        if (this.#degraded) {
          this.#degraded = false;
          // The connection's loss and return are logged once each where it is made (connect-redis).
          this.#logger.debug('Redis is back: limits are shared again');
        }
        return admission;
      } catch (error) {
        this.#fallingBack(error);
      }
    } else {
      this.#fallingBack(undefined);
    }
    switch (this.#policy) {
      case 'allow':
        return { allowed: true };
      case 'deny':
        return { allowed: false, reason: 'unavailable', retryAfterMs: 1000 };
      case 'local':
        return this.#local.admitNow(request);
    }
  }

  async reconcile(
    subject: string,
    requestId: string,
    reservedTokens: number,
    actualTokens: number,
    now: number,
  ): Promise<void> {
    this.#local.reconcileNow(subject, requestId, reservedTokens, actualTokens, now);
    if (this.#redis.healthy())
      await this.#redis.reconcile(subject, requestId, reservedTokens, actualTokens, now).catch(() => {});
  }

  async release(subject: string, requestId: string, tokens: number, now: number): Promise<void> {
    this.#local.releaseNow(subject, requestId, tokens, now);
    if (this.#redis.healthy()) await this.#redis.release(subject, requestId, tokens, now).catch(() => {});
  }

  async dailyTokens(subject: string, now: number): Promise<number> {
    return this.#redis.healthy()
      ? this.#redis.dailyTokens(subject, now)
      : this.#local.dailyTokens(subject, now);
  }

  healthy(): boolean {
    return this.#redis.healthy();
  }

  async close(): Promise<void> {
    await this.#local.close();
  }

  #fallingBack(error: unknown): void {
    if (this.#degraded) return;
    this.#degraded = true;
    this.#logger.debug(
      { err: error, policy: this.#policy },
      'Redis unreachable: limits fall back to the configured policy',
    );
  }
}
