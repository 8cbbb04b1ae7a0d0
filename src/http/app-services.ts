import type { Logger } from 'pino';
import type { AccountsService } from '../accounts/accounts-service.ts';
import type { KeyCache } from '../accounts/key-cache.ts';
import type { SessionsService } from '../accounts/sessions-service.ts';
import type { SignupGuard } from '../accounts/signup-guard.ts';
import type { HoldBook } from '../billing/hold-book.ts';
import type { SettlementQueue } from '../billing/settlement-queue.ts';
import type { Config } from '../core/config.ts';
import type { FleetWatch } from '../fleet/fleet-watch.ts';
import type { ChatGateway } from '../gateway/chat-gateway.ts';
import type { Scheduler } from '../jobs/scheduler.ts';
import type { Limiter } from '../core/rate-limits.ts';
import type { HealthReport } from '../observability/health.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { Readiness } from '../observability/readiness.ts';
import type { Tracing } from '../observability/tracing/tracing.ts';
import type { Operators } from '../operators/create-operators.ts';
import type { PaymentsService } from '../payments/payments-service.ts';
import type { Router } from '../routing/router.ts';
import type { Bus } from '../shared/bus.ts';
import type { Clock } from '../core/ids.ts';
import type { Store } from '../store/store.ts';
import type { UsageService } from '../usage/usage-service.ts';
import type { WebhookDispatcher } from '../webhooks/webhook-dispatcher.ts';
import type { WebhooksService } from '../webhooks/webhooks-service.ts';

/** Everything a route needs, built once per process (or per test server). */
export interface Services {
  config: Config;
  store: Store;
  clock: Clock;
  logger: Logger;
  cache: KeyCache;
  bus: Bus;
  accounts: AccountsService;
  /** Dashboard sign-in: sessions, password reset and change. */
  sessions: SessionsService;
  gateway: ChatGateway;
  router: Router;
  limiter: Limiter;
  settlements: SettlementQueue;
  holds: HoldBook;
  metrics: Metrics;
  scheduler: Scheduler;
  payments: PaymentsService;
  dispatcher: WebhookDispatcher;
  /** Operators' console, audit log, announcements and mail queue, status page. */
  operators: Operators;
  /** The account's usage and the operator's statistics. */
  usage: UsageService;
  /** The account's webhook endpoint, test events, delivery log and redelivery. */
  webhooks: WebhooksService;
  startedAt: number;
  /** Traces of requests, when the OTEL_* variables turn them on. */
  tracing: Tracing | undefined;
  /** Refuses (429) an address that registers, verifies or resets too often. */
  signups: SignupGuard;
  /** The version contract between this instance and the others on its database. */
  fleet: FleetWatch;
  /** The health report (`GET /health`). */
  health(): Promise<HealthReport>;
  /** Whether this instance can serve at full speed (`GET /health/ready`): a list of named conditions. */
  readiness: Readiness;
  /** Starts background work (settlement flushing, webhooks, scheduled jobs). */
  start(): Promise<void>;
  /** Stops background work and flushes what is queued; the store closes after. */
  close(): Promise<void>;
}
