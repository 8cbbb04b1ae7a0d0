import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { AccountsService } from './accounts/accounts-service.ts';
import { KeyCache } from './accounts/key-cache.ts';
import { createLogMailer, createSmtpMailer, type Mailer } from './accounts/mailer.ts';
import type { Config, PlanConfig } from './config/config.ts';
import { createHoldBook, type HoldBook } from './billing/hold-book.ts';
import { SettlementQueue } from './billing/settlement-queue.ts';
import { ChatGateway } from './gateway/chat-gateway.ts';
import {
  createHoldRecoveryJob,
  createInstanceLeaseJob,
  createRetentionJob,
  INSTANCE_LEASE_MS,
  Scheduler,
} from './jobs/scheduler.ts';
import type { Limiter } from './limits/limiter.ts';
import { type SessionPolicy, SessionsService } from './accounts/sessions-service.ts';
import { MemoryLimiter } from './limits/memory-limiter.ts';
import { Metrics } from './observability/metrics.ts';
import { createOperators, type Operators } from './operators/create-operators.ts';
import { createProvider } from './providers/create-provider.ts';
import type { Provider } from './providers/provider.ts';
import { Router } from './routing/router.ts';
import { type Bus, createLocalBus } from './shared/bus.ts';
import { GatewayError } from './shared/gateway-error.ts';
import { createTestPaymentProvider } from './payments/payment-provider.ts';
import { PaymentsService } from './payments/payments-service.ts';
import { createStripeClient, createStripePaymentProvider } from './payments/stripe-payment-provider.ts';
import { WebhookDispatcher } from './webhooks/webhook-dispatcher.ts';
import { type Clock, newId, systemClock } from './shared/ids.ts';
import { type Balance, utcDay } from './store/ledger-repo.ts';
import type { AccountRecord } from './store/records.ts';
import { type Store } from './store/store.ts';

export const VERSION = '0.1.0';

export interface EffectiveLimits {
  requestsPerMinute: number | null;
  tokensPerMinute: number | null;
  dailyTokens: number | null;
}

export type Standing =
  | { ok: true }
  | {
      ok: false;
      reason: 'subscription_expired' | 'trial_expired' | 'insufficient_balance' | 'email_unverified';
      message: string;
    };

export interface HealthReport {
  status: 'ok' | 'degraded' | 'down';
  version: string;
  uptime_s: number;
  database: { ok: boolean; dialect: string; latency_ms: number | null; error?: string };
  [part: string]: unknown;
}

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
  /** Operators' console, audit log, announcements and mail queue, status page (issue 18). */
  operators: Operators;
  startedAt: number;
  /** The plan's limits with the operator's per-account overrides applied. */
  limitsOf(account: AccountRecord): EffectiveLimits;
  /** Whether the account may spend, and if not, why (402's message). */
  billingStanding(account: AccountRecord, balance: Balance, now: number): Standing;
  /** Refuses (429) an address that registers or verifies too often. */
  guardSignup(ip: string): Promise<void>;
  health(): Promise<HealthReport>;
  /** Starts background work (settlement flushing, webhooks, scheduled jobs). */
  start(): Promise<void>;
  /** Stops background work and flushes what is queued; the store closes after. */
  close(): Promise<void>;
}

export interface ServicesOptions {
  config: Config;
  store: Store;
  logger: Logger;
  clock?: Clock;
  mailer?: Mailer;
  bus?: Bus;
  limiter?: Limiter;
  /** Where settlements the database would not take at shutdown are kept for the next start. */
  spoolPath?: string;
  /** Webhook delivery: the receiver's time limit and the retry delays (tests shorten both). */
  webhookTimeoutMs?: number;
  webhookRetryDelaysMs?: readonly number[];
  /** Stripe's API address, for stripe-mock or tests. */
  stripeApiBase?: string;
  /** Session lifetimes and sign-in throttling (tests shorten or loosen them). */
  sessionPolicy?: Partial<SessionPolicy>;
  /** How long a status page snapshot is served before it is rebuilt. */
  statusRefreshMs?: number;
}

/** Sign-up and verification attempts allowed per client address per minute. */
const SIGNUPS_PER_MINUTE = 20;

/** The spool file beside the SQLite database, or under ./data for PostgreSQL. */
function defaultSpoolPath(databaseUrl: string): string {
  const sqlite = /^postgres/.test(databaseUrl) ? undefined : databaseUrl.replace(/^sqlite:(\/\/)?/, '');
  return join(sqlite && sqlite !== ':memory:' ? dirname(sqlite) : './data', 'settlements-spool.jsonl');
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
  const accounts = new AccountsService({ store, config, clock, mailer, cache, bus, logger, limiter });
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
    if (available) logger.info('the database answers again: requests are served, waiting settlements commit');
    else
      logger.error(
        { err: error },
        'the database is unreachable: requests that need it answer 503 until it returns',
      );
  };
  const holds = createHoldBook(store);
  const instanceId = newId('inst');
  const settlements = new SettlementQueue(store.ledger, logger, {
    spoolPath: options.spoolPath ?? defaultSpoolPath(config.databaseUrl),
    holdRows: holds.rowsInStore,
  });
  settlements.onSettled = (batch) =>
    holds.settled(
      batch.map((settlement) => settlement.requestId),
      clock(),
    );
  // A shared limiter that lost a day's count takes it from the ledger (this process's waiting settlements
  // committed first, so none is in neither), and its failures are counted.
  limiter.useDailySource?.(async (subject, now) => {
    await settlements.flush();
    return store.usage.keyDayTokens(subject, utcDay(now));
  });
  limiter.onFailure?.((kind) => metrics.limiterFailures.inc({ kind }));

  const planOf = (account: AccountRecord): PlanConfig =>
    config.plans.get(account.plan) ?? (config.plans.get('free_trial') as PlanConfig);

  const limitsOf = (account: AccountRecord): EffectiveLimits => {
    const plan = planOf(account);
    return {
      requestsPerMinute: account.rpmLimit ?? plan.requestsPerMinute,
      tokensPerMinute: account.tpmLimit ?? plan.tokensPerMinute,
      dailyTokens: account.dailyTokenLimit ?? plan.dailyTokens,
    };
  };
  // The trial credit is spendable only from a verified address when mail can reach one (docs/security.md).
  const mustVerify = (account: AccountRecord): boolean =>
    config.security.requireVerifiedEmail && account.plan === 'free_trial' && !account.emailVerified;
  const billingStanding = (account: AccountRecord, balance: Balance, now: number): Standing => {
    const plan = planOf(account);
    if (account.planExpiresAt !== null && account.planExpiresAt <= now) {
      return {
        ok: false,
        reason: 'subscription_expired',
        message: `your ${plan.name} plan ended on ${new Date(account.planExpiresAt).toISOString()} without renewal; renew it or buy a plan`,
      };
    }
    if (mustVerify(account)) {
      return {
        ok: false,
        reason: 'email_unverified',
        message:
          'verify your e-mail address to use the free trial credit (the token is in the e-mail we sent), or buy a plan',
      };
    }
    if (balance.availableMicros > 0) return { ok: true };
    if (account.plan === 'free_trial' && balance.creditMicros <= 0) {
      return {
        ok: false,
        reason: 'trial_expired',
        message: 'your free trial credit has expired or is used up; buy a plan or top up',
      };
    }
    return {
      ok: false,
      reason: 'insufficient_balance',
      message: 'insufficient balance; top up or wait for requests in flight to finish',
    };
  };
  const scheduler = new Scheduler(store, clock, logger);
  const dispatcher = new WebhookDispatcher({
    store,
    clock,
    logger,
    allowPrivate: config.webhookAllowPrivate,
    ports: config.security.webhookPorts,
    ...(options.webhookTimeoutMs !== undefined ? { timeoutMs: options.webhookTimeoutMs } : {}),
    ...(options.webhookRetryDelaysMs ? { retryDelaysMs: options.webhookRetryDelaysMs } : {}),
  });
  const stripe = config.stripe
    ? createStripeClient({
        secretKey: config.stripe.secretKey,
        apiBase: options.stripeApiBase ?? config.stripe.apiBase,
      })
    : undefined;
  const payments = new PaymentsService({
    store,
    config,
    clock,
    bus,
    logger,
    stripe,
    provider: stripe ? createStripePaymentProvider(stripe) : createTestPaymentProvider(),
    onEventQueued: () => dispatcher.nudge(),
  });
  const gateway = new ChatGateway({
    config,
    store,
    router,
    limiter,
    settlements,
    holds,
    metrics,
    clock,
    logger,
    limitsOf,
    billingStanding,
  });
  const operators = createOperators({
    ...{ store, config, clock, logger, mailer, router, accounts, cache, bus, scheduler },
    ...(options.statusRefreshMs !== undefined ? { statusRefreshMs: options.statusRefreshMs } : {}),
  });
  let signups = 0;

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
    router,
    limiter,
    settlements,
    holds,
    metrics,
    scheduler,
    payments,
    dispatcher,
    operators,
    startedAt,
    limitsOf,
    billingStanding,
    async guardSignup(ip) {
      const now = clock();
      const admission = await limiter.admit({
        subject: `ip:${ip}`,
        requestId: `signup-${signups++}`,
        limits: { requestsPerMinute: SIGNUPS_PER_MINUTE, tokensPerMinute: null, dailyTokens: null },
        tokens: 0,
        now,
      });
      if (!admission.allowed) {
        throw new GatewayError(
          'rate_limit_exceeded',
          'too many sign-up attempts from this address; retry later',
          {
            ...(admission.retryAfterMs !== undefined ? { retryAfterMs: admission.retryAfterMs } : {}),
          },
        );
      }
    },
    async health() {
      let database: HealthReport['database'];
      try {
        database = { ok: true, dialect: store.db.dialect, latency_ms: round(await store.db.ping()) };
      } catch (error) {
        database = {
          ok: false,
          dialect: store.db.dialect,
          latency_ms: null,
          error: (error as Error).message,
        };
      }
      return {
        status: database.ok ? (limiter.healthy() ? 'ok' : 'degraded') : 'down',
        version: VERSION,
        uptime_s: Math.round((clock() - startedAt) / 1000),
        database,
        limiter: { backend: limiter.backend, ok: limiter.healthy() },
        settlements_pending: settlements.pending,
        deployments: router.health(),
      };
    },
    async start() {
      const replayed = await settlements.replaySpool();
      if (replayed > 0) logger.info({ replayed }, 'replayed spooled settlements');
      // An embedded database has one instance: every hold left in it belongs to a process that died.
      const released = await store.ledger.releaseExpiredHolds(
        store.db.dialect === 'sqlite' ? Number.MAX_SAFE_INTEGER : clock(),
      );
      if (released > 0) logger.warn({ released }, 'released holds of requests that never settled');
      // On a shared database, this instance's holds belong to its lease: taken before the first hold.
      if (holds.rowsInStore) {
        store.ledger.useInstance(instanceId);
        await store.ledger.renewInstanceLease(instanceId, clock(), clock() + INSTANCE_LEASE_MS);
      }
      scheduler.start([
        createRetentionJob(store, clock, config.retentionDays, logger),
        createHoldRecoveryJob(store, clock, logger),
        sessions.sweepJob(),
        ...operators.jobs(),
        ...(holds.rowsInStore ? [createInstanceLeaseJob(store, clock, instanceId)] : []),
      ]);
      dispatcher.start();
    },
    async close() {
      await scheduler.stop();
      await dispatcher.stop();
      await settlements.close();
      if (holds.rowsInStore)
        await store.ledger
          .endInstanceLease(instanceId)
          .catch((error: unknown) => logger.warn({ err: error }, 'could not end this instance’s lease'));
      await Promise.all([...providers.values()].map((provider) => provider.close()));
      await limiter.close();
      await bus.close();
    },
  };
}

const round = (ms: number): number => Math.round(ms * 1000) / 1000;
