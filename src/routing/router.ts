import { setTimeout as sleep } from 'node:timers/promises';
import type { DeploymentConfig, ModelConfig, RoutingConfig } from '../core/config.ts';
import type { ChatCompletion, ChatRequest } from '../core/chat-types.ts';
import type { AnswerStream, Provider, StreamOpener } from '../core/provider.ts';
import { openEvents } from '../core/answer-stream.ts';
import { ProviderError } from '../core/provider-error.ts';
import { GatewayError } from '../core/gateway-error.ts';
import type { Clock } from '../core/ids.ts';
import { type BreakerState, CircuitBreaker } from './circuit-breaker.ts';
import { DeploymentWindow, type WindowCounts, type WindowSnapshot } from './deployment-window.ts';
import { sanitizeUpstreamMessage } from './sanitize-upstream-message.ts';
import { applyParamPolicy } from './param-policy.ts';
import type { AttemptObserver, AttemptWatch } from './attempt-observer.ts';

interface Deployment {
  model: ModelConfig;
  config: DeploymentConfig;
  provider: Provider;
  breaker: CircuitBreaker;
  /** The last five minutes' attempts, for the operators' deployments page. */
  window: DeploymentWindow;
}

/** One deployment as the operators see it: its circuit and its last five minutes. */
export interface DeploymentStats extends WindowSnapshot {
  model: string;
  deployment: string;
  provider: string;
  upstreamModel: string;
  circuit: BreakerState;
}

/** One deployment's circuit and its last five minutes' attempts and failures: what a model's state needs. */
export interface DeploymentHealth extends WindowCounts {
  circuit: BreakerState;
}

export interface Attempted<T> {
  result: T;
  /** `provider/upstream-model` that answered. */
  deployment: string;
  provider: string;
  attempts: number;
  /** When the successful upstream call started (performance.now()). */
  upstreamStartedAt: number;
}

export interface RouterEvents {
  upstreamError(deployment: string, provider: string, failure: string): void;
}

/**
 * Chooses deployments for a public model by weight, retries failures with exponential backoff and jitter
 * on the next deployment (then on fallback models), skips deployments whose circuit is open, and gives up
 * with 502. A stream counts as delivered once its first chunk arrives: nothing is retried after that.
 */
export class Router {
  readonly #deployments = new Map<string, Deployment[]>();
  readonly #models: ReadonlyMap<string, ModelConfig>;
  readonly #routing: RoutingConfig;
  readonly #clock: Clock;
  readonly #events: RouterEvents | undefined;
  readonly #random: () => number;

  constructor(options: {
    models: ReadonlyMap<string, ModelConfig>;
    providers: ReadonlyMap<string, Provider>;
    routing: RoutingConfig;
    clock: Clock;
    events?: RouterEvents;
    random?: () => number;
  }) {
    this.#models = options.models;
    this.#routing = options.routing;
    this.#clock = options.clock;
    this.#events = options.events;
    this.#random = options.random ?? Math.random;
    for (const model of options.models.values()) {
      this.#deployments.set(
        model.id,
        model.deployments.map((config) => {
          const provider = options.providers.get(config.provider);
          if (!provider) throw new Error(`no provider ${config.provider}`);
          return {
            model,
            config,
            provider,
            breaker: new CircuitBreaker(
              options.routing.breakerFailureThreshold,
              options.routing.breakerCooldownMs,
            ),
            window: new DeploymentWindow(),
          };
        }),
      );
    }
  }

  /**
   * A whole completion from the first deployment that gives one. `account`: whose request it is (a circuit
   * opens only on failures more than one account met).
   */
  wholeAnswer(
    request: ChatRequest,
    signal: AbortSignal,
    defaultMaxTokens: number,
    account?: string,
    observer?: AttemptObserver,
  ): Promise<Attempted<ChatCompletion>> {
    return this.#attempt(request, signal, false, account, observer, (deployment, shaped, headers) =>
      deployment.provider.complete({
        request: shaped,
        upstreamModel: deployment.config.upstreamModel,
        signal,
        defaultMaxTokens,
        headers,
        account,
      }),
    );
  }

  /**
   * A stream from the first deployment that delivers a first read; the rest is the caller's to take. `open` is the
   * door's choice of form (the canonical events unless it takes another the provider offers).
   */
  openStream(
    request: ChatRequest,
    signal: AbortSignal,
    defaultMaxTokens: number,
    account?: string,
    observer?: AttemptObserver,
    open: StreamOpener = openEvents,
  ): Promise<Attempted<AnswerStream>> {
    return this.#attempt(request, signal, true, account, observer, (deployment, shaped, headers) =>
      open(deployment.provider, {
        request: shaped,
        upstreamModel: deployment.config.upstreamModel,
        signal,
        defaultMaxTokens,
        headers,
        account,
      }),
    );
  }

  /** Each deployment's circuit state, recent error rate and latency; calls no upstream. */
  health(): Record<string, unknown>[] {
    return this.#eachDeployment((model, deployment, now) => ({
      model,
      deployment: deployment.config.id,
      provider: deployment.provider.id,
      ...deployment.breaker.snapshot(now),
    }));
  }

  /** Each deployment's circuit state and last five minutes (attempts, errors, medians); calls no upstream. */
  stats(): DeploymentStats[] {
    return this.#eachDeployment((model, deployment, now) => ({
      model,
      deployment: deployment.config.id,
      provider: deployment.provider.id,
      upstreamModel: deployment.config.upstreamModel,
      circuit: deployment.breaker.snapshot(now).state,
      ...deployment.window.snapshot(now),
    }));
  }

  /** One model's deployments: circuit, attempts and failures (no latencies, no other model); calls no upstream. */
  modelHealth(model: string): DeploymentHealth[] {
    const now = this.#clock();
    return (this.#deployments.get(model) ?? []).map((deployment) => ({
      circuit: deployment.breaker.state(now),
      ...deployment.window.counts(now),
    }));
  }

  #eachDeployment<T>(describe: (model: string, deployment: Deployment, now: number) => T): T[] {
    const now = this.#clock();
    return [...this.#deployments.entries()].flatMap(([model, deployments]) =>
      deployments.map((deployment) => describe(model, deployment, now)),
    );
  }

  async #attempt<T>(
    request: ChatRequest,
    signal: AbortSignal,
    streamed: boolean,
    account: string | undefined,
    observer: AttemptObserver | undefined,
    call: (
      deployment: Deployment,
      shaped: ChatRequest,
      headers: Readonly<Record<string, string>> | undefined,
    ) => Promise<T>,
  ): Promise<Attempted<T>> {
    const candidates = this.#candidates(request.model);
    let lastError: ProviderError | undefined;
    // A field a deployment's policy refuses sends the request to one that accepts it; if none does, 400.
    let refused: GatewayError | undefined;
    let attempts = 0;
    for (
      let index = 0;
      attempts < this.#routing.maxAttempts && index < candidates.length * this.#routing.maxAttempts;
      index++
    ) {
      const deployment = candidates[index % candidates.length]!;
      const shaped = applyParamPolicy(request, deployment.config.params);
      if (shaped instanceof GatewayError) {
        refused = shaped;
        continue;
      }
      // One clock read per attempt, for the breaker's check and the window's record: an attempt counts in the
      // half-minute slot it started in.
      let now = this.#clock();
      if (!deployment.breaker.allow(now)) continue;
      if (attempts > 0) {
        await this.#backoff(attempts, lastError, signal);
        now = this.#clock();
      }
      attempts += 1;
      let watch: AttemptWatch | undefined;
      const startedAt = performance.now();
      try {
        // Inside the try: whatever the observer throws is our own exception, which gives back a probe slot.
        watch = observer?.attempt(deployment.config.id, deployment.provider.id, attempts - 1);
        const result = await call(deployment, shaped, watch?.headers);
        watch?.succeeded();
        const elapsedMs = performance.now() - startedAt;
        deployment.breaker.success(elapsedMs);
        // A stream's attempt ends at its first chunk: that is its time to first token, not its latency.
        if (streamed) deployment.window.record(now, true, undefined, elapsedMs);
        else deployment.window.record(now, true, elapsedMs);
        return {
          result,
          deployment: deployment.config.id,
          provider: deployment.provider.id,
          attempts,
          upstreamStartedAt: startedAt,
        };
      } catch (error) {
        if (!(error instanceof ProviderError)) {
          // Our own exception, not the upstream's doing: it says nothing of the deployment's health, and the
          // same request would meet it again, so it is neither counted nor retried.
          deployment.breaker.release();
          watch?.failed('internal_error');
          throw new GatewayError('internal_error', 'the gateway failed while handling this request', {
            cause: error,
          });
        }
        const failure = error;
        watch?.failed(failure.status ? String(failure.status) : failure.failure);
        if (failure.failure === 'aborted' || signal.aborted) {
          deployment.breaker.release();
          throw new GatewayError('internal_error', 'request cancelled by the client', { cause: failure });
        }
        this.#events?.upstreamError(
          deployment.config.id,
          deployment.provider.id,
          failure.status ? String(failure.status) : failure.failure,
        );
        if (failure.clientFault) {
          deployment.breaker.success(performance.now() - startedAt);
          // The one place upstream text reaches a client: never its headers, keys or own model names.
          const detail = sanitizeUpstreamMessage(
            failure.message,
            deployment.config.upstreamModel,
            request.model,
          );
          throw new GatewayError('invalid_request', `the model rejected the request: ${detail}`, {
            cause: failure,
          });
        }
        // A short Retry-After is waited out by the backoff below; a longer one keeps everyone away meanwhile.
        const longWait =
          failure.retryAfterMs !== undefined && failure.retryAfterMs > this.#routing.retryMaxMs;
        const failedAt = this.#clock();
        // An upstream that was never reached failed nobody's request in particular: such failures count in full,
        // so a dead upstream opens its circuit even where one account sends all the traffic.
        const blamed = failure.beforeSend ? undefined : account;
        deployment.breaker.failure(failedAt, longWait ? failure.retryAfterMs : undefined, blamed);
        deployment.window.record(failedAt, false);
        lastError = failure;
      }
    }
    if (refused && attempts === 0) throw refused;
    const last = lastError
      ? lastError.status
        ? `upstream status ${lastError.status}`
        : lastError.failure
      : 'no deployment available';
    throw new GatewayError(
      'provider_error',
      `${request.model} is unavailable: every deployment failed (last: ${last}); retry or switch model`,
      {
        cause: lastError,
      },
    );
  }

  /** The model's deployments in weighted-random order, then each fallback model's. */
  #candidates(modelId: string): readonly Deployment[] {
    const model = this.#models.get(modelId);
    const own = this.#deployments.get(modelId) ?? [];
    // The common case, one deployment and no fallback, needs no new array per request.
    if (own.length === 1 && !model?.fallbacks.length) return own;
    const order = [modelId, ...(model?.fallbacks ?? [])];
    return order.flatMap((id) => this.#weightedOrder(this.#deployments.get(id) ?? []));
  }

  #weightedOrder(deployments: readonly Deployment[]): Deployment[] {
    if (deployments.length <= 1) return [...deployments];
    const pool = [...deployments];
    const ordered: Deployment[] = [];
    while (pool.length > 0) {
      const total = pool.reduce((sum, d) => sum + d.config.weight, 0);
      let pick = this.#random() * total;
      const index = pool.findIndex((d) => (pick -= d.config.weight) < 0);
      ordered.push(...pool.splice(index === -1 ? pool.length - 1 : index, 1));
    }
    return ordered;
  }

  /** Exponential backoff with jitter; an upstream's Retry-After is honoured up to the configured ceiling. */
  async #backoff(attempt: number, error: ProviderError | undefined, signal: AbortSignal): Promise<void> {
    const exponential = Math.min(this.#routing.retryMaxMs, this.#routing.retryBaseMs * 2 ** (attempt - 1));
    const jittered = exponential / 2 + this.#random() * (exponential / 2);
    const wait = Math.min(this.#routing.retryMaxMs, Math.max(jittered, error?.retryAfterMs ?? 0));
    try {
      await sleep(wait, undefined, { signal });
    } catch (cause) {
      throw new GatewayError('internal_error', 'request cancelled by the client', { cause });
    }
  }
}
