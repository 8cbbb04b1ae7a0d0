import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LimitSet } from '../core/rate-limits.ts';
import { msUntilUtcMidnight, utcDayNumber, WINDOW_MS } from '../core/rate-limits.ts';
import { MemoryLimiter } from './memory-limiter.ts';

const T0 = Date.parse('2026-11-03T10:00:00Z');
const RPM = (n: number): LimitSet => ({ requestsPerMinute: n, tokensPerMinute: null, dailyTokens: null });
const TPM = (n: number): LimitSet => ({ requestsPerMinute: null, tokensPerMinute: n, dailyTokens: null });
const DAILY = (n: number): LimitSet => ({ requestsPerMinute: null, tokensPerMinute: null, dailyTokens: n });
const NONE: LimitSet = { requestsPerMinute: null, tokensPerMinute: null, dailyTokens: null };

let seq = 0;
const admit = (
  limiter: MemoryLimiter,
  subject: string,
  limits: LimitSet,
  now: number,
  tokens = 0,
  requestId = `r${seq++}`,
) => limiter.admitNow({ subject, requestId, limits, tokens, now });

describe('limiter time helpers', () => {
  it('counts to the next UTC midnight and numbers UTC days', () => {
    assert.equal(WINDOW_MS, 60_000);
    assert.equal(msUntilUtcMidnight(Date.parse('2026-11-03T23:59:59.000Z')), 1000);
    assert.equal(msUntilUtcMidnight(Date.parse('2026-11-03T00:00:00.000Z')), 86_400_000);
    assert.equal(
      utcDayNumber(Date.parse('2026-11-03T23:59:59.999Z')),
      utcDayNumber(Date.parse('2026-11-03T00:00:00Z')),
    );
    assert.equal(
      utcDayNumber(Date.parse('2026-11-04T00:00:00Z')) - utcDayNumber(Date.parse('2026-11-03T00:00:00Z')),
      1,
    );
    assert.equal(utcDayNumber(86_400_000 * 3 + 5), 3);
  });
});

describe('MemoryLimiter: requests per minute', () => {
  it('admits exactly the limit in a sliding minute and says when the oldest ages out', () => {
    const limiter = new MemoryLimiter();
    for (let i = 0; i < 3; i++) {
      const a = admit(limiter, 'k', RPM(3), T0 + i * 1000);
      assert.equal(a.allowed, true);
      assert.equal(a.requests?.limit, 3);
      assert.equal(a.requests?.remaining, 2 - i);
      assert.equal(
        a.requests?.resetMs,
        WINDOW_MS - i * 1000,
        'the oldest request (T0) ages out at T0 + 60 s',
      );
      assert.equal(a.tokens, undefined);
    }
    const refused = admit(limiter, 'k', RPM(3), T0 + 10_000);
    assert.equal(refused.allowed, false);
    assert.equal(refused.reason, 'requests');
    assert.equal(refused.requests?.resetMs, WINDOW_MS - 10_000);
    assert.equal(refused.retryAfterMs, WINDOW_MS - 10_000);
    assert.equal(admit(limiter, 'k', RPM(3), T0 + WINDOW_MS - 1).allowed, false);
    assert.equal(admit(limiter, 'k', RPM(3), T0 + WINDOW_MS).allowed, true);
    assert.equal(admit(limiter, 'k', RPM(3), T0 + WINDOW_MS).allowed, false);
  });

  it('after a limit is lowered, the wait is for enough requests to age out', () => {
    const limiter = new MemoryLimiter();
    for (let i = 0; i < 4; i++) admit(limiter, 'k', RPM(10), T0 + i * 1000);
    // 4 in the window, limit now 2: the third-newest must age out (admitted at T0 + 2000).
    const refused = admit(limiter, 'k', RPM(2), T0 + 5000);
    assert.equal(refused.retryAfterMs, 2000 + WINDOW_MS - 5000);
  });

  it('the last millisecond of a window waits 1 ms; a limit of 0 waits a whole window', () => {
    const limiter = new MemoryLimiter();
    admit(limiter, 'k', RPM(1), T0);
    assert.equal(admit(limiter, 'k', RPM(1), T0 + WINDOW_MS - 1).retryAfterMs, 1);
    assert.equal(admit(new MemoryLimiter(), 'k', RPM(0), T0).retryAfterMs, WINDOW_MS);
  });

  it('each subject (API key) has its own budget', () => {
    const limiter = new MemoryLimiter();
    assert.equal(admit(limiter, 'key-1', RPM(1), T0).allowed, true);
    assert.equal(admit(limiter, 'key-1', RPM(1), T0).allowed, false);
    assert.equal(admit(limiter, 'key-2', RPM(1), T0).allowed, true);
  });

  it('release gives the request back', () => {
    const limiter = new MemoryLimiter();
    assert.equal(admit(limiter, 'k', RPM(1), T0, 5, 'a').allowed, true);
    limiter.releaseNow('k', 'a', 5, T0 + 1);
    assert.equal(admit(limiter, 'k', RPM(1), T0 + 2, 5, 'b').allowed, true);
    assert.equal(admit(limiter, 'k', RPM(1), T0 + 3, 5, 'c').allowed, false);
  });

  it('release gives back the released request, not another admitted at a different time', () => {
    const limiter = new MemoryLimiter();
    admit(limiter, 'k', RPM(2), T0, 0, 'a');
    admit(limiter, 'k', RPM(2), T0 + 30_000, 0, 'b');
    limiter.releaseNow('k', 'b', 0, T0 + 30_001);
    // Only 'a' is left: at T0 + 60 s it ages out, so two more fit then, and one now.
    assert.equal(admit(limiter, 'k', RPM(2), T0 + 40_000, 0, 'c').allowed, true);
    const refused = admit(limiter, 'k', RPM(2), T0 + 40_001, 0, 'd');
    assert.equal(refused.retryAfterMs, WINDOW_MS - 40_001);
  });

  it('keeps exact counts over thousands of requests (the queue compacts)', () => {
    const limiter = new MemoryLimiter();
    const limits = RPM(3000);
    for (let i = 0; i < 3000; i++) assert.equal(admit(limiter, 'k', limits, T0 + i).allowed, true);
    assert.equal(admit(limiter, 'k', limits, T0 + 3000).allowed, false);
    // 2,500 age out; 2,500 more fit, not one more.
    const later = T0 + WINDOW_MS + 2499;
    for (let i = 0; i < 2500; i++) assert.equal(admit(limiter, 'k', limits, later).allowed, true, `at ${i}`);
    const refused = admit(limiter, 'k', limits, later);
    assert.equal(refused.allowed, false);
    assert.equal(refused.retryAfterMs, 1);
    for (let i = 0; i < 500; i++)
      assert.equal(admit(limiter, 'k', limits, T0 + 2 * WINDOW_MS + 2499).allowed, true);
  });
});

describe('MemoryLimiter: tokens per minute', () => {
  it('trips at the token count; remaining counts down; the wait is until enough tokens age out', () => {
    const limiter = new MemoryLimiter();
    const first = admit(limiter, 'k', TPM(1000), T0, 600, 'a');
    assert.equal(first.tokens?.limit, 1000);
    assert.equal(first.tokens?.remaining, 400);
    assert.equal(first.requests, undefined);
    assert.equal(admit(limiter, 'k', TPM(1000), T0 + 1000, 300, 'b').tokens?.remaining, 100);
    const exact = admit(limiter, 'k', TPM(1000), T0 + 2000, 100, 'c');
    assert.equal(exact.allowed, true);
    assert.equal(exact.tokens?.remaining, 0);
    assert.equal(exact.tokens?.resetMs, WINDOW_MS - 2000, "the oldest tokens ('a', T0) age out at T0 + 60 s");
    const refused = admit(limiter, 'k', TPM(1000), T0 + 3000, 500, 'd');
    assert.equal(refused.allowed, false);
    assert.equal(refused.reason, 'tokens');
    // 500 tokens fit once 'a' (600) has aged out.
    assert.equal(refused.retryAfterMs, WINDOW_MS - 3000);
    const needsTwo = admit(limiter, 'k', TPM(1000), T0 + 3000, 700, 'e');
    assert.equal(needsTwo.retryAfterMs, 1000 + WINDOW_MS - 3000);
    assert.equal(admit(limiter, 'k', TPM(1000), T0 + WINDOW_MS, 600, 'f').allowed, true);
  });

  it('a request larger than the limit waits a whole window', () => {
    const limiter = new MemoryLimiter();
    const refused = admit(limiter, 'k', TPM(100), T0, 101);
    assert.equal(refused.allowed, false);
    assert.equal(refused.retryAfterMs, WINDOW_MS);
    assert.equal(admit(limiter, 'k', TPM(100), T0, 100).allowed, true);
  });

  it('reconcile replaces the reservation with what was used', () => {
    const limiter = new MemoryLimiter();
    admit(limiter, 'k', TPM(1000), T0, 1000, 'a');
    limiter.reconcileNow('k', 'a', 1000, 250, T0 + 10);
    assert.equal(admit(limiter, 'k', TPM(1000), T0 + 20, 750, 'b').allowed, true);
    assert.equal(admit(limiter, 'k', TPM(1000), T0 + 30, 1, 'c').allowed, false);
    limiter.reconcileNow('k', 'b', 750, 800, T0 + 40);
    assert.equal(admit(limiter, 'k', TPM(1000), T0 + 50, 1, 'd').allowed, false);
    limiter.reconcileNow('k', 'missing', 5, 0, T0 + 60);
    limiter.reconcileNow('unknown', 'x', 5, 0, T0 + 60);
  });

  it('release gives the tokens back; unknown ids and subjects are ignored', () => {
    const limiter = new MemoryLimiter();
    admit(limiter, 'k', TPM(100), T0, 100, 'a');
    limiter.releaseNow('k', 'a', 100, T0 + 1);
    assert.equal(admit(limiter, 'k', TPM(100), T0 + 2, 100, 'b').allowed, true);
    limiter.releaseNow('k', 'a', 100, T0 + 3); // released twice: nothing more given back
    assert.equal(admit(limiter, 'k', TPM(100), T0 + 4, 1, 'c').allowed, false);
    limiter.releaseNow('nobody', 'x', 1, T0);
  });

  it('an unlimited key is always admitted and reports no limits', () => {
    const limiter = new MemoryLimiter();
    for (let i = 0; i < 50; i++) {
      const a = admit(limiter, 'k', NONE, T0, 1_000_000);
      assert.equal(a.allowed, true);
      assert.equal(a.requests, undefined);
      assert.equal(a.tokens, undefined);
    }
  });
});

describe('MemoryLimiter: tokens per UTC day', () => {
  it('trips at the cap and waits until the next UTC midnight', async () => {
    const limiter = new MemoryLimiter();
    assert.equal(admit(limiter, 'k', DAILY(1000), T0, 999).allowed, true);
    assert.equal(admit(limiter, 'k', DAILY(1000), T0 + 1, 1).allowed, true);
    const refused = admit(limiter, 'k', DAILY(1000), T0 + 2, 1);
    assert.equal(refused.allowed, false);
    assert.equal(refused.reason, 'daily');
    assert.equal(refused.retryAfterMs, msUntilUtcMidnight(T0 + 2));
    assert.equal(await limiter.dailyTokens('k', T0 + 3), 1000);
    const tomorrow = Date.parse('2026-11-04T00:00:00Z');
    assert.equal(await limiter.dailyTokens('k', tomorrow), 0);
    assert.equal(admit(limiter, 'k', DAILY(1000), tomorrow, 1000).allowed, true);
    assert.equal(await limiter.dailyTokens('k', tomorrow), 1000);
  });

  it('counts the day even for a key without per-minute limits; reconcile and release correct it', async () => {
    const limiter = new MemoryLimiter();
    admit(limiter, 'k', DAILY(1000), T0, 500, 'a');
    await limiter.reconcile('k', 'a', 500, 200, T0 + 1);
    assert.equal(await limiter.dailyTokens('k', T0 + 2), 200);
    admit(limiter, 'k', DAILY(1000), T0 + 3, 300, 'b');
    await limiter.release('k', 'b', 300, T0 + 4);
    assert.equal(await limiter.dailyTokens('k', T0 + 5), 200);
    await limiter.release('k', 'c', 5000, T0 + 6);
    assert.equal(await limiter.dailyTokens('k', T0 + 7), 0, 'never below zero');
    admit(limiter, 'k', DAILY(1000), T0 + 8, 10, 'd');
    await limiter.reconcile('k', 'd', 5000, 0, T0 + 9);
    assert.equal(await limiter.dailyTokens('k', T0 + 10), 0, 'never below zero');
  });

  it('raiseDaily makes the day’s count at least the ledger’s, and never lowers it', async () => {
    const limiter = new MemoryLimiter();
    limiter.raiseDaily('new', 50, T0);
    assert.equal(await limiter.dailyTokens('new', T0), 50, 'a key this process did not know yet');
    limiter.seedDaily('k', 300, T0);
    limiter.raiseDaily('k', 200, T0);
    assert.equal(await limiter.dailyTokens('k', T0), 300, 'a lower count from the ledger changes nothing');
    limiter.raiseDaily('k', 800, T0);
    assert.equal(await limiter.dailyTokens('k', T0), 800);
    assert.equal(admit(limiter, 'k', DAILY(1000), T0 + 1, 201).allowed, false);
    assert.equal(admit(limiter, 'k', DAILY(1000), T0 + 1, 200).allowed, true);
  });

  it('seedDaily adds what the store recorded before this process knew the key', async () => {
    const limiter = new MemoryLimiter();
    limiter.seedDaily('k', 900, T0);
    assert.equal(await limiter.dailyTokens('k', T0), 900);
    assert.equal(admit(limiter, 'k', DAILY(1000), T0 + 1, 101).allowed, false);
    assert.equal(admit(limiter, 'k', DAILY(1000), T0 + 1, 100).allowed, true);
    assert.equal(await limiter.dailyTokens('nobody', T0), 0);
  });

  it('a seeded count survives the idle sweep; the sweep forgets only idle subjects', async () => {
    const limiter = new MemoryLimiter();
    limiter.seedDaily('seeded', 10, T0);
    admit(limiter, 'other', RPM(5), T0, 0); // first admission runs a sweep
    admit(limiter, 'other', RPM(5), T0 + 2 * WINDOW_MS, 0); // the next sweep
    assert.equal(await limiter.dailyTokens('seeded', T0 + 2 * WINDOW_MS), 10);
  });
});

describe('MemoryLimiter: exact edges', () => {
  it('what was admitted while unlimited does not count once a limit applies', () => {
    const limiter = new MemoryLimiter();
    for (let i = 0; i < 3; i++) admit(limiter, 'k', NONE, T0 + i, 1000);
    assert.equal(admit(limiter, 'k', RPM(1), T0 + 10).allowed, true, 'no requests were kept while unlimited');
    assert.equal(
      admit(limiter, 'k', TPM(1000), T0 + 20, 1000).allowed,
      true,
      'no tokens were kept while unlimited',
    );
  });

  it('the idle sweep never forgets a key with requests still in its window', () => {
    const limiter = new MemoryLimiter();
    admit(limiter, 'k', RPM(2), T0); // also schedules the next sweep a window later
    admit(limiter, 'k', RPM(2), T0 + 30_000);
    // At T0 + 60 s the sweep runs: the first request has aged out, the second has not.
    assert.equal(admit(limiter, 'k', RPM(2), T0 + WINDOW_MS).allowed, true);
    assert.equal(admit(limiter, 'k', RPM(2), T0 + WINDOW_MS + 1).allowed, false);
  });

  it('the window slides between idle sweeps too', () => {
    const limiter = new MemoryLimiter();
    admit(limiter, 'k', RPM(2), T0); // sweeps now, and next at T0 + 60 s
    admit(limiter, 'k', RPM(2), T0 + 30_000);
    assert.equal(admit(limiter, 'k', RPM(2), T0 + WINDOW_MS).allowed, true); // sweeps; the next is at T0 + 120 s
    // At T0 + 90 s, no sweep is due, yet the request of T0 + 30 s has aged out.
    assert.equal(admit(limiter, 'k', RPM(2), T0 + 90_000).allowed, true);
    assert.equal(admit(limiter, 'k', RPM(2), T0 + 90_001).allowed, false);
  });

  it('releasing a request admitted without a requests limit gives back no other request’s slot', () => {
    const limiter = new MemoryLimiter();
    const both: LimitSet = { requestsPerMinute: 1, tokensPerMinute: 1000, dailyTokens: null };
    assert.equal(admit(limiter, 'k', both, T0, 10, 'a').allowed, true);
    // The plan changed: the next request, at the same millisecond, has a token limit only.
    assert.equal(admit(limiter, 'k', TPM(1000), T0, 10, 'b').allowed, true);
    limiter.releaseNow('k', 'b', 10, T0);
    assert.equal(admit(limiter, 'k', both, T0 + 1, 10, 'c').allowed, false, "'a' still holds the one slot");
  });

  it('a request of exactly the token limit waits for every reservation to age out, not a whole window', () => {
    const limiter = new MemoryLimiter();
    admit(limiter, 'k', TPM(100), T0, 40);
    const refused = admit(limiter, 'k', TPM(100), T0 + 1000, 100);
    assert.equal(refused.allowed, false);
    assert.equal(refused.retryAfterMs, WINDOW_MS - 1000);
  });

  it('the token wait ends as soon as the request fits exactly', () => {
    const limiter = new MemoryLimiter();
    admit(limiter, 'k', TPM(1000), T0, 600, 'a');
    admit(limiter, 'k', TPM(1000), T0 + 1000, 300, 'b');
    admit(limiter, 'k', TPM(1000), T0 + 2000, 100, 'c');
    // 600 more fit exactly once 'a' has aged out (400 + 600 = 1000).
    assert.equal(admit(limiter, 'k', TPM(1000), T0 + 3000, 600).retryAfterMs, WINDOW_MS - 3000);
  });
});

describe('MemoryLimiter: memory stays flat', () => {
  it('an idle key is forgotten at the first sweep after its window empties; a sweep runs once a window', () => {
    const limiter = new MemoryLimiter();
    admit(limiter, 'a', RPM(5), T0); // sweeps now, and next at T0 + 60 s
    admit(limiter, 'b', RPM(5), T0 + 30_000);
    assert.equal(limiter.footprint().subjects, 2);
    // At T0 + 60 s the sweep runs: 'a' has aged out and is forgotten; 'b' has not.
    admit(limiter, 'c', RPM(5), T0 + WINDOW_MS);
    assert.equal(limiter.footprint().subjects, 2, "'b' and 'c'");
    // 'b' is idle from T0 + 90 s, but the sweep walks every key, so it waits for the next one (T0 + 120 s).
    admit(limiter, 'c', RPM(5), T0 + 90_001);
    assert.equal(limiter.footprint().subjects, 2, 'no sweep before a window has passed');
    admit(limiter, 'c', RPM(5), T0 + 2 * WINDOW_MS);
    assert.equal(limiter.footprint().subjects, 1, "only 'c' is left");
  });

  it('a key holding only token reservations survives a sweep just after UTC midnight', () => {
    const limiter = new MemoryLimiter();
    const midnight = Date.parse('2026-11-04T00:00:00Z');
    admit(limiter, 'other', RPM(5), midnight - 60_000); // sweeps now, and next at midnight
    assert.equal(admit(limiter, 'k', TPM(100), midnight - 30_000, 100).allowed, true);
    // The sweep at midnight finds a new day (the key's day count is 0) and 'k' without requests, but its 100
    // tokens are in the window until 00:00:30.
    admit(limiter, 'other', RPM(5), midnight);
    assert.equal(limiter.footprint().subjects, 2);
    const refused = admit(limiter, 'k', TPM(100), midnight + 1, 1);
    assert.equal(refused.allowed, false);
    assert.equal(refused.retryAfterMs, 30_000 - 1);
  });

  it('an idle key keeps no request times in memory', () => {
    const limiter = new MemoryLimiter();
    // Its day count keeps the key itself tracked; its queue must still empty.
    for (let i = 0; i < 3; i++) admit(limiter, 'k', RPM(5), T0 + i, 5);
    admit(limiter, 'k', RPM(5), T0 + WINDOW_MS + 2, 5);
    assert.deepEqual(limiter.footprint(), { subjects: 1, storedTimes: 1 });
  });

  it('under a steady stream, expired request times are compacted away', () => {
    const limiter = new MemoryLimiter();
    const limits = RPM(100_000);
    // One request every 20 ms for four windows: 3,000 in any window, 12,000 in all.
    for (let t = 0; t < 4 * WINDOW_MS; t += 20)
      assert.equal(admit(limiter, 'k', limits, T0 + t).allowed, true);
    const { storedTimes } = limiter.footprint();
    // At most as many expired times as live ones are kept, plus the compaction threshold.
    assert.ok(storedTimes <= 2 * 3_000 + 1_025, `${storedTimes} request times stored`);
    // The window (T0 + 3 min, T0 + 4 min] holds 2,999 of them: one more fits under 3,000.
    const end = T0 + 4 * WINDOW_MS;
    assert.equal(admit(limiter, 'k', RPM(3_000), end).allowed, true);
    assert.equal(admit(limiter, 'k', RPM(3_000), end).allowed, false);
  });

  it('once a burst has aged out, a key still in use keeps only its live request times', () => {
    const limiter = new MemoryLimiter();
    const limits = RPM(100_000);
    for (let i = 0; i < 5_000; i++) admit(limiter, 'k', limits, T0);
    // One request a second keeps the key's queue from ever emptying.
    for (let t = 1_000; t <= 2 * WINDOW_MS; t += 1_000) admit(limiter, 'k', limits, T0 + t);
    const { storedTimes } = limiter.footprint();
    assert.ok(storedTimes <= 1_024 + 2 * 60, `${storedTimes} request times stored for 60 live ones`);
  });
});

describe('MemoryLimiter: lifecycle', () => {
  it('is the always-healthy memory backend and forgets everything on close', async () => {
    const limiter = new MemoryLimiter();
    assert.equal(limiter.backend, 'memory');
    assert.equal(limiter.healthy(), true);
    const a = await limiter.admit({ subject: 'k', requestId: 'a', limits: DAILY(10), tokens: 10, now: T0 });
    assert.equal(a.allowed, true);
    await limiter.close();
    assert.equal(await limiter.dailyTokens('k', T0), 0);
  });
});
