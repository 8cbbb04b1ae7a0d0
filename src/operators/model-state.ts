import type { DeploymentStats } from '../routing/router.ts';
import type { ModelState } from '../store/health-samples-repo.ts';

/** Attempts in five minutes below which an error rate says nothing. */
const MIN_ATTEMPTS = 5;
/** A five-minute error rate from which a model counts as degraded. */
const DEGRADED_ERROR_RATE = 0.1;

/**
 * Each public model's state from its deployments' health: down when no deployment can take a request (every
 * circuit open) or every recent attempt failed; degraded when a circuit is not closed or at least 10 % of
 * the last five minutes' attempts failed; operational otherwise (no traffic is no evidence of trouble).
 */
export function deriveModelStates(
  models: Iterable<string>,
  stats: readonly DeploymentStats[],
): Map<string, ModelState> {
  const states = new Map<string, ModelState>();
  for (const model of models) {
    const deployments = stats.filter((stat) => stat.model === model);
    const attempts = deployments.reduce((sum, stat) => sum + stat.requests, 0);
    const failures = deployments.reduce((sum, stat) => sum + stat.errorRate * stat.requests, 0);
    const rate = attempts >= MIN_ATTEMPTS ? failures / attempts : 0;
    let state: ModelState = 'operational';
    if (deployments.every((stat) => stat.circuit === 'open') || rate >= 0.999) state = 'down';
    else if (deployments.some((stat) => stat.circuit !== 'closed') || rate >= DEGRADED_ERROR_RATE)
      state = 'degraded';
    states.set(model, state);
  }
  return states;
}
