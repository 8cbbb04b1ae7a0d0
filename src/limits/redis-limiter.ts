import {
  type Admission,
  type AdmissionRequest,
  type DailySource,
  type SharedLimiter,
  WINDOW_MS,
  limitState,
  msUntilUtcMidnight,
  utcDayNumber,
} from '../core/rate-limits.ts';
import { type RedisClient, RedisScript } from '../shared/redis-script.ts';
import { ADMIT_SCRIPT, RECONCILE_SCRIPT, RELEASE_SCRIPT } from './redis-scripts.ts';

const REASONS = { 1: 'requests', 2: 'tokens', 3: 'daily' } as const;
const UNSEEDED = 4;

const admitScript = new RedisScript(ADMIT_SCRIPT);
const reconcileScript = new RedisScript(RECONCILE_SCRIPT);
const releaseScript = new RedisScript(RELEASE_SCRIPT);

const limit = (value: number | null): number => (value === null ? -1 : value);
const since = (time: number): number | undefined => (time < 0 ? undefined : time);

/** Limits shared by every instance: one Lua script per admission, one round trip. */
export class RedisLimiter implements SharedLimiter {
  readonly backend = 'redis';
  readonly #redis: RedisClient;
  readonly #prefix: string;
  #dailySource: DailySource | undefined;
  /** Seeds being read, per subject and day: concurrent admissions of one key read the ledger once. */
  readonly #seeding = new Map<string, Promise<number>>();

  readonly #whenDown: (() => void) | undefined;

  /** `whenDown` is told each time an admission finds the client not connected (it may reconnect at once). */
  constructor(redis: RedisClient, prefix = 'tg', whenDown?: () => void) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#whenDown = whenDown;
  }

  /**
   * Where a daily cap's count comes from when Redis does not hold the day (restarted empty, failed over,
   * evicted). Without one, such a day starts at 0.
   */
  useDailySource(source: DailySource): void {
    this.#dailySource = source;
  }

  /** A bare Redis limiter has no fallback: its failures reach the caller as rejections, counted there. */
  onFailure(): void {}

  #keys(subject: string, now: number): string[] {
    const base = `${this.#prefix}:{${subject}}`;
    return [
      `${base}:req`,
      `${base}:tok`,
      `${base}:tokv`,
      `${base}:toksum`,
      `${base}:day:${utcDayNumber(now)}`,
      `${base}:dayseed:${utcDayNumber(now)}`,
    ];
  }

  async admit(request: AdmissionRequest): Promise<Admission> {
    let result = await this.#admit(request, this.#dailySource ? -1 : 0);
    if (result[1] === UNSEEDED) {
      // The ledger is read once for all the subject's admissions that find the day unseeded meanwhile: the
      // reading is shared until the admission that started it has set the day (later ones then find it set).
      const id = `${request.subject}/${utcDayNumber(request.now)}`;
      let reading = this.#seeding.get(id);
      const own = reading === undefined;
      if (!reading) {
        reading = this.#dailySource!(request.subject, request.now);
        this.#seeding.set(id, reading);
      }
      try {
        result = await this.#admit(request, await reading);
      } finally {
        if (own) this.#seeding.delete(id);
      }
    }
    return this.#admission(request, result);
  }

  async #admit(
    { subject, requestId, limits, tokens, now }: AdmissionRequest,
    seed: number,
  ): Promise<number[]> {
    const result = (await admitScript.run(this.#redis, this.#keys(subject, now), [
      now,
      WINDOW_MS,
      limit(limits.requestsPerMinute),
      limit(limits.tokensPerMinute),
      limit(limits.dailyTokens),
      tokens,
      requestId,
      msUntilUtcMidnight(now),
      seed,
    ])) as unknown[];
    return result.map(Number);
  }

  #admission({ limits, now }: AdmissionRequest, result: number[]): Admission {
    const [allowed, reason, retryMs, count, used, oldestRequest, oldestTokens] = result as [
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
    await releaseScript.run(this.#redis, this.#keys(subject, now).slice(0, 5), [requestId, tokens]);
  }

  async dailyTokens(subject: string, now: number): Promise<number> {
    return Number((await this.#redis.get(this.#keys(subject, now)[4]!)) ?? 0);
  }

  healthy(): boolean {
    if (this.#redis.status === 'ready') return true;
    this.#whenDown?.();
    return false;
  }

  async warm(): Promise<void> {
    await Promise.all(
      [admitScript, reconcileScript, releaseScript].map((script) => script.load(this.#redis)),
    );
  }

  async close(): Promise<void> {}
}
