import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DeploymentHealth } from '../routing/router.ts';
import { deriveModelStates } from './model-state.ts';

const health = (change: Partial<DeploymentHealth> = {}): DeploymentHealth => ({
  circuit: 'closed',
  requests: 0,
  errors: 0,
  ...change,
});

/** The states of these models, each with its deployments' health. */
const statesOf = (deployments: Record<string, DeploymentHealth[]>) =>
  deriveModelStates(Object.keys(deployments), (model) => deployments[model] ?? []);

describe('a model’s state from its deployments', () => {
  it('is operational with closed circuits and few errors, even with no traffic', () => {
    const states = statesOf({ a: [health({ requests: 100, errors: 5 })], b: [health()] });
    assert.deepEqual(
      [...states],
      [
        ['a', 'operational'],
        ['b', 'operational'],
      ],
    );
  });

  it('is degraded with one open circuit of two, or a tenth of attempts failing', () => {
    const states = statesOf({
      a: [health({ circuit: 'open' }), health()],
      b: [health({ requests: 10, errors: 1 })],
      c: [health({ requests: 4, errors: 2 })],
    });
    assert.equal(states.get('a'), 'degraded');
    assert.equal(states.get('b'), 'degraded');
    assert.equal(states.get('c'), 'operational', 'four attempts are too few to judge');
  });

  it('is down when every circuit is open or every recent attempt failed', () => {
    const states = statesOf({
      a: [health({ circuit: 'open' })],
      b: [health({ requests: 6, errors: 6 })],
      c: [health({ requests: 3, errors: 3 }), health({ requests: 3, errors: 3 })],
    });
    assert.equal(states.get('a'), 'down');
    assert.equal(states.get('b'), 'down');
    assert.equal(states.get('c'), 'down', 'attempts and failures add up across deployments');
  });

  it('judges exact counts, not a rate rounded to three decimals', () => {
    const states = statesOf({
      // 0.9995 rounds to 1: one attempt in two thousand still succeeds, so not every attempt failed.
      a: [health({ requests: 2_000, errors: 1_999 })],
      // 0.0995 rounds to 0.1: just under a tenth failed.
      b: [health({ requests: 10_000, errors: 995 })],
    });
    assert.equal(states.get('a'), 'degraded');
    assert.equal(states.get('b'), 'operational');
  });
});
