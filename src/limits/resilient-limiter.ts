import { ReplyError } from 'ioredis';
import type { Logger } from 'pino';
import type { LimiterFailurePolicy } from '../core/config.ts';
import {
  type Admission,
  type AdmissionRequest,
  type DailySource,
  type LimiterFailure,
  type SharedLimiter,
  utcDayNumber,
} from '../core/rate-limits.ts';
import { MemoryLimiter } from './memory-limiter.ts';
import type { RedisLimiter } from './redis-limiter.ts';

/**
 * Redis first; while Redis cannot be reached, the configured policy: `local` keeps per-instance limits in
 * memory (the default), `allow` admits everything, `deny` refuses with 503. Recovers by itself: each
 * admission tries Redis again as soon as its client reconnects.
 *
 * Redis answering an admission with an error (a script error: a bug, a server limit, a read-only replica
 * after a failover) is not an outage of the connection and is not hidden as one: it is logged at error
 * level once per episode, counted (`tollgate_limiter_failures_total{kind="script"}`), and `/health` says
 * degraded until an admission succeeds again; meanwhile the same policy applies.
 *
 * The local fallback honours daily caps: the first fallback admission of a key in each episode takes the
 * day's tokens from the ledger (the daily source), so that falling back cannot reopen a cap.
 */
export class ResilientLimiter implements SharedLimiter {
  readonly backend = 'redis';
  readonly #redis: RedisLimiter;
  readonly #local = new MemoryLimiter();
  readonly #policy: LimiterFailurePolicy;
  readonly #logger: Logger;
  #failure: LimiterFailure | undefined;
  #onFailure: ((kind: LimiterFailure) => void) | undefined;
  #dailySource: DailySource | undefined;
  /** Keys whose local daily count took the ledger's in this fallback episode (subject/day). */
  #seeded = new Set<string>();

  constructor(redis: RedisLimiter, policy: LimiterFailurePolicy, logger: Logger) {
    this.#redis = redis;
    this.#policy = policy;
    this.#logger = logger;
  }

  /** Called on every admission that could not use Redis (a metric counts them). */
  onFailure(listener: (kind: LimiterFailure) => void): void {
    this.#onFailure = listener;
  }

  useDailySource(source: DailySource): void {
    this.#dailySource = source;
    this.#redis.useDailySource(source);
  }

  async admit(request: AdmissionRequest): Promise<Admission> {
    if (this.#redis.healthy()) {
      try {
        const admission = await this.#redis.admit(request);
        if (this.#failure !== undefined) {
          const was = this.#failure;
          this.#failure = undefined;
          // The connection's loss and return are logged once each where it is made (connect-redis).
          if (was === 'script') this.#logger.info('the Redis limiter answers again: limits are shared again');
        }
        return admission;
      } catch (error) {
        this.#failing(error instanceof ReplyError ? 'script' : 'unreachable', error);
      }
    } else {
      this.#failing('unreachable', undefined);
    }
    switch (this.#policy) {
      case 'allow':
        return { allowed: true };
      case 'deny':
        return { allowed: false, reason: 'unavailable', retryAfterMs: 1000 };
      case 'local':
        if (request.limits.dailyTokens !== null) await this.#seedLocal(request);
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

  /** Limits are shared and Redis answers: false while unreachable or while its admissions fail. */
  /** Loads the scripts while Redis answers; a Redis still away is not waited for (admissions fall back). */
  async warm(): Promise<void> {
    if (this.#redis.healthy()) await this.#redis.warm().catch(() => {});
  }

  healthy(): boolean {
    return this.#failure !== 'script' && this.#redis.healthy();
  }

  /** Why limits are not shared right now, if they are not. */
  failure(): LimiterFailure | undefined {
    return this.#redis.healthy() ? this.#failure : 'unreachable';
  }

  async close(): Promise<void> {
    await this.#local.close();
  }

  async #seedLocal(request: AdmissionRequest): Promise<void> {
    if (!this.#dailySource) return;
    const id = `${request.subject}/${utcDayNumber(request.now)}`;
    if (this.#seeded.has(id)) return;
    try {
      const used = await this.#dailySource(request.subject, request.now);
      this.#local.raiseDaily(request.subject, used, request.now);
      this.#seeded.add(id);
    } catch (error) {
      // The ledger is away too: the request cannot take a hold either; try again on the next admission.
      this.#logger.warn({ err: error }, 'could not read the day’s usage for the local limits');
    }
  }

  #failing(kind: LimiterFailure, error: unknown): void {
    this.#onFailure?.(kind);
    if (this.#failure === kind) return;
    if (this.#failure === undefined) this.#seeded = new Set();
    this.#failure = kind;
    if (kind === 'script')
      this.#logger.error(
        { err: error, policy: this.#policy },
        'the Redis limiter fails (Redis answers with an error): limits follow the failure policy until it succeeds again',
      );
    else
      this.#logger.debug(
        { err: error, policy: this.#policy },
        'Redis unreachable: limits fall back to the configured policy',
      );
  }
}
