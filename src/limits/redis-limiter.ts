import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import {
  type Admission,
  type AdmissionRequest,
  type Limiter,
  WINDOW_MS,
  limitState,
  msUntilUtcMidnight,
  utcDayNumber,
} from './limiter.ts';
import { ADMIT_SCRIPT, RECONCILE_SCRIPT, RELEASE_SCRIPT } from './redis-scripts.ts';

const REASONS = { 1: 'requests', 2: 'tokens', 3: 'daily' } as const;

class Script {
  readonly #source: string;
  readonly #sha: string;
  constructor(source: string) {
    this.#source = source;
    this.#sha = createHash('sha1').update(source).digest('hex');
  }
  /** EVALSHA, loading the script once if Redis does not have it (after a restart or a flush). */
  async run(redis: Redis, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.#sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!String((error as Error).message).includes('NOSCRIPT')) throw error;
      return redis.eval(this.#source, keys.length, ...keys, ...args);
    }
  }
}

const admitScript = new Script(ADMIT_SCRIPT);
const reconcileScript = new Script(RECONCILE_SCRIPT);
const releaseScript = new Script(RELEASE_SCRIPT);

const limit = (value: number | null): number => (value === null ? -1 : value);
const since = (time: number): number | undefined => (time < 0 ? undefined : time);

/** Limits shared by every instance: one Lua script per admission, one round trip. */
export class RedisLimiter implements Limiter {
  readonly backend = 'redis';
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, prefix = 'tg') {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  #keys(subject: string, now: number): string[] {
    const base = `${this.#prefix}:{${subject}}`;
    return [
      `${base}:req`,
      `${base}:tok`,
      `${base}:tokv`,
      `${base}:toksum`,
      `${base}:day:${utcDayNumber(now)}`,
    ];
  }

  async admit({ subject, requestId, limits, tokens, now }: AdmissionRequest): Promise<Admission> {
    const untilMidnight = msUntilUtcMidnight(now);
    const result = (await admitScript.run(this.#redis, this.#keys(subject, now), [
      now,
      WINDOW_MS,
      limit(limits.requestsPerMinute),
      limit(limits.tokensPerMinute),
      limit(limits.dailyTokens),
      tokens,
      requestId,
      untilMidnight,
    ])) as number[];
    const [allowed, reason, retryMs, count, used, oldestRequest, oldestTokens] = result.map(Number) as [
      number,
      1 | 2 | 3,
      number,
      number,
      number,
      number,
      number,
    ];
    const admission: Admission =
      allowed === 1 ? { allowed: true } : { allowed: false, reason: REASONS[reason], retryAfterMs: retryMs };
    const { requestsPerMinute: rpm, tokensPerMinute: tpm } = limits;
    if (rpm !== null) admission.requests = limitState(rpm, count, since(oldestRequest), now);
    if (tpm !== null) admission.tokens = limitState(tpm, used, since(oldestTokens), now);
    return admission;
  }

  async reconcile(
    subject: string,
    requestId: string,
    reservedTokens: number,
    actualTokens: number,
    now: number,
  ): Promise<void> {
    const [, tok, tokv, toksum, day] = this.#keys(subject, now) as [string, string, string, string, string];
    await reconcileScript.run(
      this.#redis,
      [tok, tokv, toksum, day],
      [requestId, reservedTokens, actualTokens, WINDOW_MS],
    );
  }

  async release(subject: string, requestId: string, tokens: number, now: number): Promise<void> {
    await releaseScript.run(this.#redis, this.#keys(subject, now), [requestId, tokens]);
  }

  async dailyTokens(subject: string, now: number): Promise<number> {
    return Number((await this.#redis.get(this.#keys(subject, now)[4]!)) ?? 0);
  }

  healthy(): boolean {
    return this.#redis.status === 'ready';
  }

  async close(): Promise<void> {}
}
