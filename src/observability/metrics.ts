import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { RetryReport } from '../shared/retry-episode.ts';
import { CountedHistogram, type HistogramSeries } from './counted-histogram.ts';

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Prometheus metrics of one process, in its own registry (tests run several servers in one process). */
export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'tollgate_chat_requests_total',
    help: 'Chat requests by public model, provider and outcome',
    labelNames: ['model', 'provider', 'status'] as const,
    registers: [this.registry],
    collect: () => this.#addCounts(),
  });
  readonly latency = new CountedHistogram({
    name: 'tollgate_chat_request_duration_seconds',
    help: 'Chat request duration by public model',
    labelNames: ['model', 'provider'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly ttft = new CountedHistogram({
    name: 'tollgate_chat_time_to_first_token_seconds',
    help: 'Time to the first streamed chunk',
    labelNames: ['model', 'provider'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly overhead = new CountedHistogram({
    name: 'tollgate_gateway_overhead_seconds',
    help: 'Time spent in the gateway, upstream time excluded',
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05],
    registers: [this.registry],
  });
  readonly upstreamErrors = new Counter({
    name: 'tollgate_upstream_errors_total',
    help: 'Upstream failures by deployment and kind',
    labelNames: ['deployment', 'provider', 'kind'] as const,
    registers: [this.registry],
  });
  readonly tokens = new Counter({
    name: 'tollgate_tokens_total',
    help: 'Tokens metered by public model and direction',
    labelNames: ['model', 'type'] as const,
    registers: [this.registry],
    collect: () => this.#addCounts(),
  });
  readonly rejected = new Counter({
    name: 'tollgate_rejected_requests_total',
    help: 'Requests refused before the upstream, by error code',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });

  readonly limiterFailures = new Counter({
    name: 'tollgate_limiter_failures_total',
    help: 'Admissions that could not use the shared limiter: Redis unreachable, or its script failing',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly processFaults = new Counter({
    name: 'tollgate_process_faults_total',
    help: 'Errors that escaped every handler: uncaught exceptions (the process restarts) and unhandled rejections',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly retries = new Counter({
    name: 'tollgate_retries_total',
    help: 'Failed tries of background work that will be tried again after a backoff, by loop',
    labelNames: ['loop'] as const,
    registers: [this.registry],
  });

  readonly retryFailing = new Gauge({
    name: 'tollgate_retry_failing',
    help: '1 while a background loop keeps failing (an episode of retries), 0 once it succeeds again',
    labelNames: ['loop'] as const,
    registers: [this.registry],
  });

  /** The retry loops' counts go to the two series above. */
  readonly retryReport: RetryReport = {
    retried: (loop) => this.retries.inc({ loop }),
    failing: (loop, failing) => this.retryFailing.set({ loop }, failing ? 1 : 0),
  };

  /** Labelled series of finished requests, by model, provider and outcome: found once, then reused. */
  readonly #outcomes = new Map<string, OutcomeSeries>();

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    // Both series exist from the start: a scrape shows 0, not nothing, while all is well.
    this.processFaults.inc({ kind: 'uncaught_exception' }, 0);
    this.processFaults.inc({ kind: 'unhandled_rejection' }, 0);
  }

  /**
   * Counts one finished chat request: outcome, duration, time to first token (streams), tokens. The request and
   * token counts are kept as plain numbers and added to their counters when a scrape reads them (#addCounts):
   * prom-client builds a label key and checks the labels on every increment, three times a request otherwise;
   * the histograms are plain counts too (CountedHistogram).
   */
  recordRequest(
    model: string,
    provider: string,
    status: string,
    seconds: number,
    ttftSeconds: number | null,
    promptTokens: number,
    completionTokens: number,
  ): void {
    const key = `${model}\u0000${provider}\u0000${status}`;
    let series = this.#outcomes.get(key);
    if (!series) {
      series = {
        model,
        provider,
        status,
        requests: 0,
        promptTokens: 0,
        completionTokens: 0,
        latency: this.latency.series(model, provider),
        // Made on the first time to first token: a histogram of whole answers' shows no series.
        ttft: undefined,
      };
      this.#outcomes.set(key, series);
    }
    series.requests += 1;
    series.promptTokens += promptTokens;
    series.completionTokens += completionTokens;
    series.latency.observe(seconds);
    if (ttftSeconds !== null) (series.ttft ??= this.ttft.series(model, provider)).observe(ttftSeconds);
  }

  /** Adds the counts recorded since the last scrape to the request and token counters (their collect hook). */
  #addCounts(): void {
    for (const series of this.#outcomes.values()) {
      if (series.requests === 0) continue;
      const { model, provider, status } = series;
      this.requests.inc({ model, provider, status }, series.requests);
      this.tokens.inc({ model, type: 'prompt' }, series.promptTokens);
      this.tokens.inc({ model, type: 'completion' }, series.completionTokens);
      series.requests = 0;
      series.promptTokens = 0;
      series.completionTokens = 0;
    }
  }
}

interface OutcomeSeries {
  model: string;
  provider: string;
  status: string;
  /** Recorded since the counters were last read. */
  requests: number;
  promptTokens: number;
  completionTokens: number;
  latency: HistogramSeries;
  ttft: HistogramSeries | undefined;
}
