import {
  type Admission,
  type AdmissionRequest,
  type Limiter,
  WINDOW_MS,
  limitState,
  msUntilUtcMidnight,
  utcDayNumber,
} from '../core/rate-limits.ts';

interface TokenEntry {
  at: number;
  tokens: number;
  /** Whether the admission is in the requests window too (there was a requests/min limit). */
  counted: boolean;
}

/**
 * Times in a sliding window, oldest first. Expiry moves a head index instead of shifting the array, so
 * dropping the oldest entries costs nothing per call; the array is compacted once the dead part dominates.
 */
class TimeQueue {
  #times: number[] = [];
  #head = 0;

  get length(): number {
    return this.#times.length - this.#head;
  }

  /** The i-th oldest time in the window. */
  at(index: number): number | undefined {
    return this.#times[this.#head + index];
  }

  /** Times held in memory, expired ones not yet compacted away included. */
  get stored(): number {
    return this.#times.length;
  }

  push(time: number): void {
    this.#times.push(time);
  }

  dropUpTo(horizon: number): void {
    while (this.#head < this.#times.length && this.#times[this.#head]! <= horizon) this.#head++;
    if (this.#head === this.#times.length) {
      this.#times = [];
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#times.length) {
      this.#times = this.#times.slice(this.#head);
      this.#head = 0;
    }
  }

  /** Removes the newest occurrence of `time` (an admission given back). */
  remove(time: number): void {
    const index = this.#times.lastIndexOf(time);
    if (index >= this.#head) this.#times.splice(index, 1);
  }
}

interface Subject {
  /** Admission times of the requests in the window, oldest first; kept only under a requests/min limit. */
  requests: TimeQueue;
  /**
   * Token reservations in the window, oldest first, by request id for reconciliation; kept only under a
   * requests/min or tokens/min limit. An unlimited key costs no memory per request.
   */
  tokens: Map<string, TokenEntry>;
  tokenSum: number;
  day: number;
  dayTokens: number;
}

/** Exact sliding windows in this process: the limiter of a single instance. */
export class MemoryLimiter implements Limiter {
  readonly backend = 'memory';
  readonly #subjects = new Map<string, Subject>();
  #sweepAt = 0;

  async admit(request: AdmissionRequest): Promise<Admission> {
    return this.admitNow(request);
  }

  /** The synchronous admission (also the fallback path while Redis is away). */
  admitNow({ subject: id, requestId, limits, tokens, now }: AdmissionRequest): Admission {
    this.#sweep(now);
    const subject = this.#subject(id, now);
    const { requestsPerMinute: rpm, tokensPerMinute: tpm, dailyTokens: daily } = limits;
    const count = subject.requests.length;
    if (rpm !== null && count + 1 > rpm) {
      const oldest = subject.requests.at(Math.max(0, count - rpm)) ?? now;
      return this.#state(subject, rpm, tpm, now, {
        allowed: false,
        reason: 'requests',
        retryAfterMs: Math.max(1, oldest + WINDOW_MS - now),
      });
    }
    if (tpm !== null && subject.tokenSum + tokens > tpm) {
      return this.#state(subject, rpm, tpm, now, {
        allowed: false,
        reason: 'tokens',
        retryAfterMs: this.#tokensFreeAt(subject, tokens, tpm, now),
      });
    }
    if (daily !== null && subject.dayTokens + tokens > daily) {
      return this.#state(subject, rpm, tpm, now, {
        allowed: false,
        reason: 'daily',
        retryAfterMs: msUntilUtcMidnight(now),
      });
    }
    if (rpm !== null) subject.requests.push(now);
    if (rpm !== null || tpm !== null) {
      subject.tokens.set(requestId, { at: now, tokens, counted: rpm !== null });
      subject.tokenSum += tokens;
    }
    subject.dayTokens += tokens;
    return this.#state(subject, rpm, tpm, now, { allowed: true });
  }

  /** Adds the state of each limited dimension: what `x-ratelimit-*` reports, on an admission or a refusal. */
  #state(
    subject: Subject,
    rpm: number | null,
    tpm: number | null,
    now: number,
    admission: Admission,
  ): Admission {
    if (rpm !== null)
      admission.requests = limitState(rpm, subject.requests.length, subject.requests.at(0), now);
    if (tpm !== null)
      admission.tokens = limitState(tpm, subject.tokenSum, subject.tokens.values().next().value?.at, now);
    return admission;
  }

  async reconcile(
    id: string,
    requestId: string,
    reservedTokens: number,
    actualTokens: number,
    now: number,
  ): Promise<void> {
    this.reconcileNow(id, requestId, reservedTokens, actualTokens, now);
  }

  reconcileNow(
    id: string,
    requestId: string,
    reservedTokens: number,
    actualTokens: number,
    now: number,
  ): void {
    const subject = this.#subjects.get(id);
    if (!subject) return;
    this.#expire(subject, now);
    const entry = subject.tokens.get(requestId);
    if (entry) {
      subject.tokenSum += actualTokens - entry.tokens;
      entry.tokens = actualTokens;
    }
    if (subject.day === utcDayNumber(now))
      subject.dayTokens = Math.max(0, subject.dayTokens + actualTokens - reservedTokens);
  }

  async release(id: string, requestId: string, tokens: number, now: number): Promise<void> {
    this.releaseNow(id, requestId, tokens, now);
  }

  releaseNow(id: string, requestId: string, tokens: number, now: number): void {
    const subject = this.#subjects.get(id);
    if (!subject) return;
    const entry = subject.tokens.get(requestId);
    if (entry) {
      if (entry.counted) subject.requests.remove(entry.at);
      subject.tokenSum -= entry.tokens;
      subject.tokens.delete(requestId);
    }
    if (subject.day === utcDayNumber(now)) subject.dayTokens = Math.max(0, subject.dayTokens - tokens);
  }

  async dailyTokens(id: string, now: number): Promise<number> {
    const subject = this.#subjects.get(id);
    return subject && subject.day === utcDayNumber(now) ? subject.dayTokens : 0;
  }

  /** Adds the tokens the store recorded for today before this process knew the subject. */
  seedDaily(id: string, tokens: number, now: number): void {
    const subject = this.#subject(id, now);
    subject.dayTokens += tokens;
  }

  /** Makes the day's count at least `tokens` (the ledger's): how a fallback takes over a shared day. */
  raiseDaily(id: string, tokens: number, now: number): void {
    const subject = this.#subject(id, now);
    subject.dayTokens = Math.max(subject.dayTokens, tokens);
  }

  /** What this limiter holds in memory: keys tracked, and request times stored (expired ones awaiting compaction included). */
  footprint(): { subjects: number; storedTimes: number } {
    let storedTimes = 0;
    for (const subject of this.#subjects.values()) storedTimes += subject.requests.stored;
    return { subjects: this.#subjects.size, storedTimes };
  }

  healthy(): boolean {
    return true;
  }

  async close(): Promise<void> {
    this.#subjects.clear();
  }

  #subject(id: string, now: number): Subject {
    let subject = this.#subjects.get(id);
    if (!subject) {
      subject = {
        requests: new TimeQueue(),
        tokens: new Map(),
        tokenSum: 0,
        day: utcDayNumber(now),
        dayTokens: 0,
      };
      this.#subjects.set(id, subject);
    }
    this.#expire(subject, now);
    return subject;
  }

  #expire(subject: Subject, now: number): void {
    const horizon = now - WINDOW_MS;
    subject.requests.dropUpTo(horizon);
    for (const [requestId, entry] of subject.tokens) {
      if (entry.at > horizon) break; // insertion order is time order
      subject.tokenSum -= entry.tokens;
      subject.tokens.delete(requestId);
    }
    const day = utcDayNumber(now);
    if (subject.day !== day) {
      subject.day = day;
      subject.dayTokens = 0;
    }
  }

  /** When enough reservations age out for `tokens` more to fit; a request larger than the limit waits a window. */
  #tokensFreeAt(subject: Subject, tokens: number, tpm: number, now: number): number {
    if (tokens > tpm) return WINDOW_MS;
    let sum = subject.tokenSum;
    for (const entry of subject.tokens.values()) {
      sum -= entry.tokens;
      if (sum + tokens <= tpm) return Math.max(1, entry.at + WINDOW_MS - now);
    }
    return WINDOW_MS;
  }

  /** Forgets idle subjects now and then, so memory tracks active keys only. */
  #sweep(now: number): void {
    if (now < this.#sweepAt) return;
    this.#sweepAt = now + WINDOW_MS;
    for (const [id, subject] of this.#subjects) {
      this.#expire(subject, now);
      if (subject.requests.length === 0 && subject.tokens.size === 0 && subject.dayTokens === 0)
        this.#subjects.delete(id);
    }
  }
}
