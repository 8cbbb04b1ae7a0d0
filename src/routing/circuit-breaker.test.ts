import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CircuitBreaker } from './circuit-breaker.ts';

const T0 = 1_000_000;

/** A breaker opened by `threshold` consecutive failures at T0. */
function opened(threshold: number, cooldownMs: number): CircuitBreaker {
  const breaker = new CircuitBreaker(threshold, cooldownMs);
  for (let i = 0; i < threshold; i++) breaker.failure(T0);
  return breaker;
}

describe('CircuitBreaker', () => {
  it('a new breaker is closed, lets every request through and reports no history', () => {
    const breaker = new CircuitBreaker(3, 1000);
    for (let i = 0; i < 5; i++) assert.equal(breaker.allow(T0), true);
    assert.deepEqual(breaker.snapshot(T0), {
      state: 'closed',
      error_rate: 0,
      latency_ms: null,
      blocked_for_ms: 0,
    });
  });

  it('opens at exactly `threshold` consecutive failures, not one before', () => {
    const breaker = new CircuitBreaker(3, 1000);
    breaker.failure(T0);
    breaker.failure(T0);
    assert.equal(breaker.allow(T0), true, 'two failures of three keep it closed');
    assert.equal(breaker.snapshot(T0).state, 'closed');
    breaker.failure(T0);
    assert.equal(breaker.snapshot(T0).state, 'open');
    assert.equal(breaker.allow(T0), false);
  });

  it('a success in between resets the count: failures must be consecutive', () => {
    const breaker = new CircuitBreaker(2, 1000);
    breaker.failure(T0);
    breaker.success(10);
    breaker.failure(T0);
    assert.equal(breaker.allow(T0), true);
    breaker.failure(T0);
    assert.equal(breaker.allow(T0), false);
  });

  it('stays open for the cooldown, then lets exactly one probe through', () => {
    const breaker = opened(1, 1000);
    assert.equal(breaker.allow(T0 + 999), false, 'one millisecond before the cooldown ends');
    assert.equal(breaker.snapshot(T0 + 999).state, 'open');
    assert.equal(breaker.snapshot(T0 + 1000).state, 'half_open');
    assert.equal(breaker.allow(T0 + 1000), true, 'the probe');
    assert.equal(breaker.allow(T0 + 1000), false, 'a second request while the probe is out');
    assert.equal(breaker.allow(T0 + 5000), false, 'still one probe at a time, however late');
  });

  it('a successful probe closes it again', () => {
    const breaker = opened(1, 1000);
    assert.equal(breaker.allow(T0 + 1000), true);
    breaker.success(20);
    assert.equal(breaker.snapshot(T0 + 1000).state, 'closed');
    assert.equal(breaker.allow(T0 + 1000), true);
    assert.equal(breaker.allow(T0 + 1000), true, 'closed: no probe limit');
  });

  it('a failed probe opens it again for a whole new cooldown: at once with threshold 1, else on a second account’s probe', () => {
    const breaker = opened(1, 1000);
    assert.equal(breaker.allow(T0 + 1000), true);
    breaker.failure(T0 + 1500, undefined, 'acct_a');
    assert.equal(breaker.snapshot(T0 + 1500).state, 'open');
    assert.equal(breaker.allow(T0 + 2499), false, 'the cooldown counts from the failed probe');
    assert.equal(breaker.allow(T0 + 2500), true);

    const threshold5 = opened(5, 1000);
    assert.equal(threshold5.allow(T0 + 1000), true);
    threshold5.failure(T0 + 1500, undefined, 'acct_a');
    assert.equal(
      threshold5.snapshot(T0 + 1500).state,
      'half_open',
      'one account’s failed probe: no verdict yet',
    );
    assert.equal(threshold5.allow(T0 + 1500), true, 'the next probe goes');
    threshold5.failure(T0 + 1600, undefined, 'acct_a');
    assert.equal(threshold5.snapshot(T0 + 1600).state, 'half_open', 'the same account again: still none');
    assert.equal(threshold5.allow(T0 + 1600), true);
    threshold5.failure(T0 + 1700, undefined, 'acct_b');
    assert.equal(threshold5.snapshot(T0 + 1700).state, 'open', 'a second account’s probe failed too');
    assert.equal(threshold5.allow(T0 + 2699), false, 'the cooldown counts from that probe');
    assert.equal(threshold5.allow(T0 + 2700), true);
  });

  it('one account cannot keep a circuit open: its failed probe does not, and another’s success closes it', () => {
    const breaker = opened(5, 1000);
    assert.equal(breaker.allow(T0 + 1000), true);
    breaker.failure(T0 + 1000, undefined, 'acct_abuser');
    assert.equal(breaker.allow(T0 + 1001), true);
    breaker.success(10);
    assert.equal(breaker.snapshot(T0 + 1001).state, 'closed');
  });

  it('a probe that ends without a verdict lets the next probe through', () => {
    const breaker = opened(1, 1000);
    assert.equal(breaker.allow(T0 + 1000), true);
    assert.equal(breaker.allow(T0 + 1001), false);
    breaker.release();
    assert.equal(breaker.snapshot(T0 + 1002).state, 'half_open', 'release is no verdict');
    assert.equal(breaker.allow(T0 + 1002), true);
  });

  it('a Retry-After keeps requests away until it has passed, whatever the state', () => {
    const breaker = new CircuitBreaker(10, 1000);
    breaker.failure(T0, 5000);
    assert.equal(breaker.snapshot(T0).state, 'closed', 'one failure of ten');
    assert.equal(breaker.allow(T0 + 4999), false);
    assert.equal(breaker.snapshot(T0 + 1000).blocked_for_ms, 4000);
    assert.equal(breaker.allow(T0 + 5000), true);
    assert.equal(breaker.snapshot(T0 + 6000).blocked_for_ms, 0);
  });

  it('a shorter Retry-After never shortens a longer one already in force', () => {
    const breaker = new CircuitBreaker(10, 1000);
    breaker.failure(T0, 5000);
    breaker.failure(T0 + 1000, 1000);
    assert.equal(breaker.allow(T0 + 4000), false);
    assert.equal(breaker.snapshot(T0 + 4000).blocked_for_ms, 1000);
    assert.equal(breaker.allow(T0 + 5000), true);
  });

  it('reports the error rate of the last 50 outcomes, rounded to three decimals', () => {
    const breaker = new CircuitBreaker(1000, 1000);
    breaker.failure(T0);
    breaker.success(1);
    breaker.success(1);
    assert.equal(breaker.snapshot(T0).error_rate, 0.333);
    for (let i = 0; i < 47; i++) breaker.success(1);
    assert.equal(breaker.snapshot(T0).error_rate, 0.02, 'the failure is the oldest of 50');
    breaker.success(1);
    assert.equal(breaker.snapshot(T0).error_rate, 0);
    for (let i = 0; i < 50; i++) breaker.failure(T0);
    assert.equal(breaker.snapshot(T0).error_rate, 1);
  });

  it('reports latency as a moving average (4/5 the old, 1/5 the new), rounded to 0.1 ms', () => {
    const breaker = new CircuitBreaker(3, 1000);
    breaker.success(100);
    assert.equal(breaker.snapshot(T0).latency_ms, 100, 'the first sample is the average');
    breaker.success(200);
    assert.equal(breaker.snapshot(T0).latency_ms, 120);
    breaker.success(10.06);
    assert.equal(breaker.snapshot(T0).latency_ms, 98);
    breaker.failure(T0);
    assert.equal(breaker.snapshot(T0).latency_ms, 98, 'a failure has no latency');
  });

  it('one account’s failures in a run count up to half the threshold: it alone never opens the circuit', () => {
    const breaker = new CircuitBreaker(5, 1000);
    for (let i = 0; i < 50; i++) breaker.failure(T0, undefined, 'acct_a');
    assert.equal(breaker.snapshot(T0).state, 'closed', 'fifty failures of one account count three');
    assert.equal(breaker.snapshot(T0).error_rate, 1, 'yet /health shows them all');
    breaker.failure(T0, undefined, 'acct_b');
    assert.equal(breaker.snapshot(T0).state, 'closed', 'four of five');
    breaker.failure(T0, undefined, 'acct_c');
    assert.equal(breaker.snapshot(T0).state, 'open', 'a third account makes five');
  });

  it('a success ends the run: each account’s share starts again', () => {
    const breaker = new CircuitBreaker(4, 1000);
    breaker.failure(T0, undefined, 'acct_a');
    breaker.failure(T0, undefined, 'acct_a');
    breaker.failure(T0, undefined, 'acct_b');
    breaker.success(5);
    breaker.failure(T0, undefined, 'acct_b');
    breaker.failure(T0, undefined, 'acct_a');
    breaker.failure(T0, undefined, 'acct_a');
    assert.equal(breaker.snapshot(T0).state, 'closed', 'three since the success');
    breaker.failure(T0, undefined, 'acct_b');
    assert.equal(breaker.snapshot(T0).state, 'open');
  });

  it('with a threshold of one, one failure of one account opens it (the operator asked for that)', () => {
    const breaker = new CircuitBreaker(1, 1000);
    breaker.failure(T0, undefined, 'acct_a');
    assert.equal(breaker.snapshot(T0).state, 'open');
  });
});
