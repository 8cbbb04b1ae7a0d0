import type { DeploymentHealth } from '../routing/router.ts';
import type { ModelState } from '../store/health-samples-repo.ts';

/** Attempts in five minutes below which an error rate says nothing. */
const MIN_ATTEMPTS = 5;
/** A five-minute error rate from which a model counts as degraded. */
const DEGRADED_ERROR_RATE = 0.1;

/**
 * Each public model's state from its deployments' health (`healthOf`, read per model): down when no
 * deployment can take a request (every circuit open) or every recent attempt failed; degraded when a circuit
 * is not closed or at least 10 % of the last five minutes' attempts failed; operational otherwise (no traffic
 * is no evidence of trouble). Judged on the exact counts of attempts and failures, never a rounded rate.
 */
export function deriveModelStates(
  models: Iterable<string>,
  healthOf: (model: string) => readonly DeploymentHealth[],
): Map<string, ModelState> {
  const states = new Map<string, ModelState>();
  for (const model of models) {
    const deployments = healthOf(model);
    let attempts = 0;
    let failures = 0;
    for (const deployment of deployments) {
      attempts += deployment.requests;
      failures += deployment.errors;
    }
    const judged = attempts >= MIN_ATTEMPTS;
    let state: ModelState = 'operational';
    if (deployments.every((d) => d.circuit === 'open') || (judged && failures === attempts)) state = 'down';
    else if (
      deployments.some((d) => d.circuit !== 'closed') ||
      (judged && failures >= DEGRADED_ERROR_RATE * attempts)
    )
      state = 'degraded';
    states.set(model, state);
  }
  return states;
}
