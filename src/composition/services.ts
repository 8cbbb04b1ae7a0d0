import type { Logger } from 'pino';
import { AccountsService } from '../accounts/accounts-service.ts';
import { KeyCache } from '../accounts/key-cache.ts';
import { SignupGuard } from '../accounts/signup-guard.ts';
import { createLogMailer, createSmtpMailer, type Mailer } from '../accounts/mailer.ts';
import type { Config } from '../core/config.ts';
import { createHoldBook, type HoldBook, sharedSide } from '../billing/hold-book.ts';
import { SettlementQueue, settlementBatchSize } from '../billing/settlement-queue.ts';
import { defaultSpoolPath } from '../billing/spool-path.ts';
import { billingStanding } from '../billing/standing.ts';
import { ChatGateway, type ChatGatewayOptions } from '../gateway/chat-gateway.ts';
import { EmbeddingsGateway } from '../embeddings/embeddings-gateway.ts';
import {
  createHoldRecoveryJob,
  createInstanceLeaseJob,
  createRetentionJob,
  INSTANCE_LEASE_MS,
  Scheduler,
} from '../jobs/scheduler.ts';
import { type Limiter, sharedLimiterOf } from '../core/rate-limits.ts';
import { type SessionPolicy, SessionsService } from '../accounts/sessions-service.ts';
import { effectiveLimits } from '../billing/effective-limits.ts';
import { MemoryLimiter } from '../limits/memory-limiter.ts';
import { createHealthCheck, VERSION } from '../observability/health.ts';
import { Readiness } from '../observability/readiness.ts';
import { warmUp } from './warm-up.ts';
import { createTracing } from '../observability/tracing/tracing.ts';
import { createRequestEvents } from '../observability/request-events/request-events.ts';
import { Metrics } from '../observability/metrics.ts';
import { registerStateGauges } from '../observability/state-gauges.ts';
import { createOperators } from '../operators/create-operators.ts';
import { createProvider } from '../providers/create-provider.ts';
import type { Provider } from '../core/provider.ts';
import { Router } from '../routing/router.ts';
import { type Bus, createLocalBus } from '../shared/bus.ts';
import { createTestPaymentProvider } from '../payments/payment-provider.ts';
import { PaymentsService } from '../payments/payments-service.ts';
import { BillingCycle } from '../payments/billing-cycle.ts';
import { createStripeClient, createStripePaymentProvider } from '../payments/stripe-payment-provider.ts';
import { WebhookDispatcher } from '../webhooks/webhook-dispatcher.ts';
import { UsageService } from '../usage/usage-service.ts';
import { WebhooksService } from '../webhooks/webhooks-service.ts';
import type { Resolve } from '../webhooks/url-guard.ts';
import { SendThrottle } from '../webhooks/send-throttle.ts';
import { type Clock, newId, systemClock } from '../core/ids.ts';
import { utcDay } from '../core/time.ts';
import { type Store } from '../store/store.ts';
import type { Services } from '../http/app-services.ts';

export type { Services };
import { FleetWatch } from '../fleet/fleet-watch.ts';
import { LedgerMovesWatch } from '../fleet/ledger-moves-watch.ts';
import { ENFORCED_RULES } from '../fleet/release.ts';
import { createSecretBox } from '../shared/secret-box.ts';

export interface ServicesOptions {
  config: Config;
  store: Store;
  logger: Logger;
  clock?: Clock;
  mailer?: Mailer;
  bus?: Bus;
  limiter?: Limiter;
  /** Where credit is held (holds in Redis for many instances); by default, by the store (createHoldBook). */
  holds?: HoldBook;
  /** Where settlements the database would not take at shutdown are kept for the next start. */
  spoolPath?: string;
  /**
   * Webhook delivery: the receiver's time limit, the retry delays, and how often the outbox is read for
   * retries that have come due (1 s by default; a new event goes at once whatever this is). Tests shorten all three.
   */
  webhookTimeoutMs?: number;
  webhookRetryDelaysMs?: readonly number[];
  webhookPollMs?: number;
  /** How webhook host names are resolved, when saved and at each delivery (DNS by default; tests play DNS). */
  webhookResolve?: Resolve;
  /** Stripe's API address, for stripe-mock or tests. */
  stripeApiBase?: string;
  /** Session lifetimes and sign-in throttling (tests shorten or loosen them). */
  sessionPolicy?: Partial<SessionPolicy>;
  /** How long a status page snapshot is served before it is rebuilt. */
  statusRefreshMs?: number;
  /** The operator forced this release to keep running beside newer ones (TOLLGATE_FORCE_VERSION). */
  forceVersion?: boolean;
  /** Where the OTEL_* and TOLLGATE_REQUEST_EVENTS* variables are read (process.env by default). */
  telemetryEnv?: Readonly<Record<string, string | undefined>>;
}

/** Wires the domain services over a store; does no I/O until used. */
export function createServices(options: ServicesOptions): Services {
  const { config, store, logger } = options;
  const clock = options.clock ?? systemClock;
  const cache = new KeyCache();
  const bus = options.bus ?? createLocalBus();
  const mailer =
    options.mailer ??
    (config.smtpUrl
      ? createSmtpMailer(config.smtpUrl, 'Tollgate <no-reply@tollgate.local>')
      : createLogMailer(logger, { withText: !config.security.production }));
  const limiter: Limiter = options.limiter ?? new MemoryLimiter();
  const startedAt = clock();
  const metrics = new Metrics();
  const sessions = new SessionsService({
    store,
    config,
    clock,
    mailer,
    limiter,
    logger,
    ...(options.sessionPolicy ? { policy: options.sessionPolicy } : {}),
  });
  const providers = new Map<string, Provider>(
    [...config.providers.values()].map((provider) => [
      provider.id,
      createProvider(provider, config.timeouts),
    ]),
  );
  const tracing = createTracing(
    options.telemetryEnv ?? process.env,
    new Map([...config.providers.values()].map((provider) => [provider.id, provider.type])),
    logger,
    VERSION,
  );
  const requestEvents = createRequestEvents(options.telemetryEnv ?? process.env, metrics.registry, logger);
  const router = new Router({
    models: config.models,
    providers,
    routing: config.routing,
    clock,
    events: {
      upstreamError: (deployment, provider, kind) =>
        metrics.upstreamErrors.inc({ deployment, provider, kind }),
    },
  });
  store.db.onAvailability = (available, error) => {
    if (available) {
      logger.info('the database answers again: requests are served, waiting settlements commit');
      // Work waiting out a backoff is tried now rather than when its timer ends.
      settlements.retryNow();
      scheduler.retryNow();
      dispatcher.nudge();
    } else
      logger.error(
        { err: error },
        'the database is unreachable: requests that need it answer 503 until it returns',
      );
  };
  const holds = options.holds ?? createHoldBook(store);
  const shared = sharedSide(holds);
  const readiness = new Readiness();
  let started = false;
  readiness.require('started', () => started);
  // Asked until first met: a Redis emptied under a running fleet fences every instance at once, and holds wait
  // that out themselves; turning the whole fleet unready would leave a load balancer with no instance at all.
  let holdsWereReady = false;
  if (shared) readiness.require('credit holds', () => (holdsWereReady ||= shared.ready()));
  const accounts = new AccountsService({ store, config, clock, mailer, cache, bus, logger, limiter, holds });
  const instanceId = newId('inst');
  const settlements = new SettlementQueue(store.ledger, logger, {
    spoolPath: options.spoolPath ?? defaultSpoolPath(config.databaseUrl),
    holdRows: holds.rowsInStore,
    maxBatch: settlementBatchSize(store.db.capabilities),
    retryReport: metrics.retryReport,
  });
  if (shared) shared.retryReport = metrics.retryReport;
  settlements.onSettled = (batch, charged) => {
    holds.settled(
      batch.map((settlement) => settlement.requestId),
      clock(),
    );
    shared?.committed(batch, charged);
  };
  // A shared limiter that lost a day's count takes it from the ledger (this process's waiting settlements
  // committed first, so none is in neither), and its failures are counted.
  const sharedLimiter = sharedLimiterOf(limiter);
  sharedLimiter?.useDailySource(async (subject, now) => {
    await settlements.flush();
    return store.usage.keyDayTokens(subject, utcDay(now));
  });
  sharedLimiter?.onFailure((kind) => metrics.limiterFailures.inc({ kind }));

  const fleet = new FleetWatch({
    fleet: store.fleet,
    instanceId: shared?.instanceId ?? instanceId,
    reads: [...createSecretBox(config.security.secretKeys).opens, ...ENFORCED_RULES],
    logger,
    clock,
    singleProcess: store.db.capabilities.singleProcess,
    force: options.forceVersion ?? false,
    ...(shared ? { liveWriters: (now: number) => shared.liveInstances(now) } : {}),
  });
  readiness.require('version contract', () => {
    const condition = fleet.readiness();
    return condition.ok || condition.detail || 'not judged yet';
  });
  const ledgerMoves =
    shared && store.db.capabilities.ledgerTriggers
      ? new LedgerMovesWatch({
          fleet: store.fleet,
          forget: (id, version) => shared.forget(id, version),
          logger,
        })
      : undefined;

  const scheduler = new Scheduler(store, clock, logger);
  scheduler.retryReport = metrics.retryReport;
  const dispatcher = new WebhookDispatcher({
    store,
    clock,
    logger,
    allowPrivate: config.webhookAllowPrivate,
    ports: config.security.webhookPorts,
    ...(options.webhookTimeoutMs !== undefined ? { timeoutMs: options.webhookTimeoutMs } : {}),
    ...(options.webhookRetryDelaysMs ? { retryDelaysMs: options.webhookRetryDelaysMs } : {}),
    ...(options.webhookPollMs !== undefined ? { pollMs: options.webhookPollMs } : {}),
    ...(options.webhookResolve ? { resolve: options.webhookResolve } : {}),
  });
  dispatcher.retryReport = metrics.retryReport;
  const stripe = config.stripe
    ? createStripeClient({
        secretKey: config.stripe.secretKey,
        apiBase: options.stripeApiBase ?? config.stripe.apiBase,
      })
    : undefined;
  const cycle = new BillingCycle({
    ...{ store, config, clock, bus, logger },
    providerId: stripe ? 'stripe' : 'test',
    stripe,
    onEventQueued: () => dispatcher.nudge(),
  });
  const payments = new PaymentsService({
    cycle,
    store,
    config,
    clock,
    bus,
    logger,
    stripe,
    provider: stripe ? createStripePaymentProvider(stripe) : createTestPaymentProvider(),
    onEventQueued: () => dispatcher.nudge(),
  });
  const webhooks = new WebhooksService({
    ...{ store, config, clock, onEventQueued: () => dispatcher.nudge() },
    throttle: new SendThrottle(limiter, clock),
    ...(options.webhookResolve ? { resolve: options.webhookResolve } : {}),
  });
  const earned = registerStateGauges(metrics.registry, {
    store,
    router,
    limiter,
    settlements,
    holdsInStore: holds.rowsInStore,
  });
  const gatewayOptions: ChatGatewayOptions = {
    config,
    store,
    router,
    limiter,
    settlements,
    holds,
    metrics,
    clock,
    logger,
    limitsOf: (account) => effectiveLimits(config.plans, account),
    billingStanding: (account, now, balance) => billingStanding(config, account, now, balance),
    onFinished: requestEvents
      ? (settlement) => {
          earned(settlement);
          requestEvents.record(settlement);
        }
      : earned,
  };
  const gateway = new ChatGateway(gatewayOptions);
  const embeddings = new EmbeddingsGateway(gatewayOptions);
  const operators = createOperators({
    ...{ store, config, clock, logger, mailer, router, accounts, cache, bus, scheduler, webhooks },
    ...(options.statusRefreshMs !== undefined ? { statusRefreshMs: options.statusRefreshMs } : {}),
  });

  return {
    config,
    store,
    clock,
    logger,
    cache,
    bus,
    accounts,
    sessions,
    gateway,
    embeddings,
    router,
    limiter,
    settlements,
    holds,
    metrics,
    scheduler,
    payments,
    cycle,
    dispatcher,
    operators,
    webhooks,
    usage: new UsageService({ store, config, clock }),
    startedAt,
    tracing,
    signups: new SignupGuard(limiter, clock),
    fleet,
    health: createHealthCheck({ store, limiter, settlements, router, clock, startedAt }),
    readiness,
    async start() {
      await fleet.start();
      const replayed = await settlements.replaySpool();
      if (replayed > 0) logger.info({ replayed }, 'replayed spooled settlements');
      // An embedded database has one instance: every hold left in it belongs to a process that died.
      const released = await store.ledger.releaseExpiredHolds(
        store.db.capabilities.singleProcess ? Number.MAX_SAFE_INTEGER : clock(),
      );
      if (released > 0) logger.warn({ released }, 'released holds of requests that never settled');
      // On a shared database, this instance's holds belong to its lease: taken before the first hold.
      if (holds.rowsInStore) {
        store.ledger.useInstance(instanceId);
        await store.ledger.renewInstanceLease(instanceId, clock(), clock() + INSTANCE_LEASE_MS);
      }
      await shared?.start((settlement) => settlements.add(settlement));
      ledgerMoves?.start();
      scheduler.start([
        createRetentionJob(store, clock, config.retentionDays, logger),
        createHoldRecoveryJob(store, clock, logger),
        sessions.sweepJob(),
        ...operators.jobs(),
        cycle.renewalJob(),
        cycle.alertsJob(),
        ...(holds.rowsInStore ? [createInstanceLeaseJob(store, clock, instanceId)] : []),
      ]);
      dispatcher.start();
      // What the first requests would otherwise pay for: connections, scripts, parsing and the tokenizer.
      await warmUp({ store, limiter, config, logger, now: clock() });
      started = true;
    },
    async close() {
      await scheduler.stop();
      await dispatcher.stop();
      await settlements.close();
      await ledgerMoves?.close();
      await shared?.close();
      await fleet.close();
      if (holds.rowsInStore)
        await store.ledger
          .endInstanceLease(instanceId)
          .catch((error: unknown) => logger.warn({ err: error }, 'could not end this instance’s lease'));
      await Promise.all([...providers.values()].map((provider) => provider.close()));
      await embeddings.close();
      await limiter.close();
      await bus.close();
      await Promise.all([tracing?.close(), requestEvents?.close()]);
    },
  };
}
