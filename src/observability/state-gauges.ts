import { Counter, Gauge, type Registry } from 'prom-client';
import type { SettlementQueue } from '../billing/settlement-queue.ts';
import type { Limiter } from '../core/rate-limits.ts';
import type { Router } from '../routing/router.ts';
import type { Settlement } from '../core/records.ts';
import type { Store } from '../store/store.ts';
import { CountedHistogram, type HistogramSeries } from './counted-histogram.ts';

export interface StateParts {
  store: Store;
  router: Router;
  limiter: Limiter;
  settlements: SettlementQueue;
  /** Whether credit holds live in the store's rows (else in Redis). */
  holdsInStore: boolean;
}

const CIRCUIT = { closed: 0, half_open: 1, open: 2 } as const;

/**
 * Gauges read when Prometheus scrapes (nothing per request): circuits, the database's and the limiter's reach,
 * where holds are kept, the webhook backlog, waiting settlements. Returns the revenue meter, which the gateway
 * feeds per finished request with a plain addition (added to its counter on a scrape).
 */
export function registerStateGauges(registry: Registry, parts: StateParts): (settlement: Settlement) => void {
  const { store, router, limiter, settlements } = parts;
  const registers = [registry];
  new Gauge({
    name: 'tollgate_circuit_state',
    help: 'Each deployment’s circuit: 0 closed, 1 half-open, 2 open',
    labelNames: ['model', 'deployment', 'provider'] as const,
    registers,
    collect() {
      this.reset();
      for (const d of router.stats())
        this.set({ model: d.model, deployment: d.deployment, provider: d.provider }, CIRCUIT[d.circuit]);
    },
  });
  new Gauge({
    name: 'tollgate_backend_up',
    help: 'Whether a backing service answers (1) or not (0): the database, and the limiter (Redis when shared)',
    labelNames: ['component', 'backend'] as const,
    registers,
    async collect() {
      const database = await store.db.ping().then(
        () => 1,
        () => 0,
      );
      this.set({ component: 'database', backend: store.db.dialect }, database);
      this.set({ component: 'limiter', backend: limiter.backend }, limiter.healthy() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'tollgate_hold_backend_info',
    help: 'Where credit holds are kept (1 on the backend in use): the database, or Redis',
    labelNames: ['backend'] as const,
    registers,
  }).set({ backend: parts.holdsInStore ? 'database' : 'redis' }, 1);
  new Gauge({
    name: 'tollgate_webhook_backlog',
    help: 'Webhook events not yet delivered: pending (will be retried) and failing (gave up)',
    labelNames: ['state'] as const,
    registers,
    async collect() {
      const backlog = await store.adminReports.webhookBacklog().catch(() => undefined);
      if (!backlog) return;
      this.set({ state: 'pending' }, backlog.pending);
      this.set({ state: 'failing' }, backlog.failing);
    },
  });
  new Gauge({
    name: 'tollgate_settlements_pending',
    help: 'Finished requests whose settlement waits to be committed to the ledger',
    registers,
    collect() {
      this.set(settlements.pending);
    },
  });
  const earned = new Map<string, number>();
  new Counter({
    name: 'tollgate_revenue_usd_total',
    help: 'What finished requests were charged, in USD, by public model',
    labelNames: ['model'] as const,
    registers,
    collect() {
      for (const [model, micros] of earned) if (micros > 0) this.inc({ model }, micros / 1_000_000);
      earned.clear();
    },
  });
  const byDeployment = deploymentHistograms(registry);
  return (settlement) => {
    if (settlement.costMicros > 0)
      earned.set(settlement.model, (earned.get(settlement.model) ?? 0) + settlement.costMicros);
    if (settlement.deployment !== null) byDeployment(settlement);
  };
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Duration and time to first token by model and the deployment that answered (its series found once, then kept). */
function deploymentHistograms(registry: Registry): (settlement: Settlement) => void {
  const options = { labelNames: ['model', 'deployment'], buckets: LATENCY_BUCKETS, registers: [registry] };
  const latency = new CountedHistogram({
    name: 'tollgate_deployment_request_duration_seconds',
    help: 'Chat request duration by public model and the deployment that answered',
    ...options,
  });
  const ttft = new CountedHistogram({
    name: 'tollgate_deployment_time_to_first_token_seconds',
    help: 'Time to the first streamed chunk by public model and the deployment that answered',
    ...options,
  });
  const series = new Map<string, { latency: HistogramSeries; ttft: HistogramSeries | undefined }>();
  return (settlement) => {
    const key = `${settlement.model}\u0000${settlement.deployment}`;
    let found = series.get(key);
    if (!found) {
      found = { latency: latency.series(settlement.model, settlement.deployment!), ttft: undefined };
      series.set(key, found);
    }
    found.latency.observe(settlement.latencyMs / 1000);
    if (settlement.ttftMs !== null)
      (found.ttft ??= ttft.series(settlement.model, settlement.deployment!)).observe(
        settlement.ttftMs / 1000,
      );
  };
}
