import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DeploymentStats } from '../routing/router.ts';
import { deriveModelStates } from './model-state.ts';

const stat = (model: string, change: Partial<DeploymentStats>): DeploymentStats => ({
  model,
  deployment: `${model}-d`,
  provider: 'p',
  upstreamModel: 'u',
  circuit: 'closed',
  requests: 0,
  errorRate: 0,
  latencyP50Ms: null,
  ttftP50Ms: null,
  ...change,
});

describe('a model’s state from its deployments', () => {
  it('is operational with closed circuits and few errors, even with no traffic', () => {
    const states = deriveModelStates(
      ['a', 'b'],
      [stat('a', { requests: 100, errorRate: 0.05 }), stat('b', {})],
    );
    assert.deepEqual(
      [...states],
      [
        ['a', 'operational'],
        ['b', 'operational'],
      ],
    );
  });

  it('is degraded with one open circuit of two, or a tenth of attempts failing', () => {
    const states = deriveModelStates(
      ['a', 'b', 'c'],
      [
        stat('a', { circuit: 'open' }),
        stat('a', { deployment: 'a2' }),
        stat('b', { requests: 10, errorRate: 0.1 }),
        stat('c', { requests: 4, errorRate: 0.5 }),
      ],
    );
    assert.equal(states.get('a'), 'degraded');
    assert.equal(states.get('b'), 'degraded');
    assert.equal(states.get('c'), 'operational', 'four attempts are too few to judge');
  });

  it('is down when every circuit is open or every recent attempt failed', () => {
    const states = deriveModelStates(
      ['a', 'b'],
      [stat('a', { circuit: 'open' }), stat('b', { requests: 6, errorRate: 1 })],
    );
    assert.equal(states.get('a'), 'down');
    assert.equal(states.get('b'), 'down');
  });
});
