import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_RETRY_DELAYS_MS, nextAttemptAt } from './retry-schedule.ts';

const NOW = Date.parse('2026-11-03T10:00:00Z');

describe('webhook retry schedule', () => {
  it('by default retries ten times over about a day (85,360 s), each delay longer than the last', () => {
    assert.equal(DEFAULT_RETRY_DELAYS_MS.length, 10);
    assert.equal(DEFAULT_RETRY_DELAYS_MS[0], 10_000);
    assert.equal(DEFAULT_RETRY_DELAYS_MS.at(-1), 36_000_000);
    assert.equal(
      DEFAULT_RETRY_DELAYS_MS.reduce((sum, delay) => sum + delay, 0),
      85_360_000,
    );
    for (let i = 1; i < DEFAULT_RETRY_DELAYS_MS.length; i++)
      assert.ok(DEFAULT_RETRY_DELAYS_MS[i]! > DEFAULT_RETRY_DELAYS_MS[i - 1]!, `delay ${i + 1}`);
  });

  it('the attempt after attempt n waits the n-th delay; with no jitter drawn, exactly it', () => {
    const middle = (): number => 0.5; // 0.8 + 0.5 * 0.4 = 1
    assert.equal(nextAttemptAt(1, NOW, DEFAULT_RETRY_DELAYS_MS, middle), NOW + 10_000);
    assert.equal(nextAttemptAt(2, NOW, DEFAULT_RETRY_DELAYS_MS, middle), NOW + 30_000);
    assert.equal(nextAttemptAt(10, NOW, DEFAULT_RETRY_DELAYS_MS, middle), NOW + 36_000_000);
  });

  it('jitters each delay within ±20%, rounded to a whole millisecond', () => {
    assert.equal(
      nextAttemptAt(1, NOW, [10_000], () => 0),
      NOW + 8_000,
    );
    assert.equal(
      nextAttemptAt(1, NOW, [10_000], () => 0.999_999),
      NOW + 12_000,
      'just under the top of the range',
    );
    assert.equal(
      nextAttemptAt(1, NOW, [10_000], () => 0.25),
      NOW + 9_000,
    );
    assert.equal(
      nextAttemptAt(1, NOW, [7], () => 0.3),
      NOW + 6,
      '7 × 0.92 = 6.44 rounds to 6',
    );
    for (let i = 0; i < 200; i++) {
      const at = nextAttemptAt(1, NOW, DEFAULT_RETRY_DELAYS_MS)!;
      assert.ok(at >= NOW + 8_000 && at <= NOW + 12_000, `${at - NOW} ms`);
      assert.ok(Number.isInteger(at));
    }
  });

  it('after the last delay there is no next attempt: the event is failed', () => {
    assert.equal(nextAttemptAt(11, NOW, DEFAULT_RETRY_DELAYS_MS), undefined);
    assert.equal(nextAttemptAt(1, NOW, []), undefined, 'an empty schedule never retries');
    assert.equal(nextAttemptAt(3, NOW, [5, 5]), undefined);
    assert.equal(
      nextAttemptAt(2, NOW, [5, 5], () => 0.5),
      NOW + 5,
    );
  });

  it('a shortened schedule (as tests and operators may configure) is used as given', () => {
    const fast = [150, 300];
    assert.equal(
      nextAttemptAt(1, NOW, fast, () => 0.5),
      NOW + 150,
    );
    assert.equal(
      nextAttemptAt(2, NOW, fast, () => 0.5),
      NOW + 300,
    );
  });
});
