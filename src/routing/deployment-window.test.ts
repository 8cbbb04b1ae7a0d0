import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DeploymentWindow } from './deployment-window.ts';

describe('a deployment’s five-minute window', () => {
  it('counts attempts and errors and estimates the medians within a bucket', () => {
    const window = new DeploymentWindow();
    const now = 1_000_000_000;
    for (let i = 0; i < 8; i++) window.record(now, true, 100);
    window.record(now, false);
    window.record(now, false);
    window.record(now, true, undefined, 40);
    const snapshot = window.snapshot(now);
    assert.equal(snapshot.requests, 11);
    assert.equal(snapshot.errorRate, 0.182);
    assert.ok(snapshot.latencyP50Ms! > 80 && snapshot.latencyP50Ms! < 125, String(snapshot.latencyP50Ms));
    assert.ok(snapshot.ttftP50Ms! > 30 && snapshot.ttftP50Ms! < 50, String(snapshot.ttftP50Ms));
    assert.deepEqual(window.counts(now), { requests: 11, errors: 2 }, 'the exact counts, no rounding');
    assert.deepEqual(window.counts(now + 5 * 60_000), { requests: 0, errors: 0 }, 'five minutes on: gone');
  });

  it('forgets attempts older than five minutes and reuses their slots', () => {
    const window = new DeploymentWindow();
    const start = 2_000_000_000;
    window.record(start, false, 10);
    assert.equal(window.snapshot(start + 4 * 60_000).requests, 1);
    assert.equal(window.snapshot(start + 5 * 60_000 + 30_000).requests, 0);
    window.record(start + 5 * 60_000, true, 10);
    const later = window.snapshot(start + 5 * 60_000);
    assert.equal(later.requests, 1);
    assert.equal(later.errorRate, 0);
    assert.equal(window.snapshot(start).latencyP50Ms, null);
  });
});
