import type { Logger } from 'pino';
import { AccountsService } from './accounts/accounts-service.ts';
import { KeyCache } from './accounts/key-cache.ts';
import { createLogMailer, createSmtpMailer, type Mailer } from './accounts/mailer.ts';
import type { Config, PlanConfig } from './config/config.ts';
import { type Bus, createLocalBus } from './shared/bus.ts';
import { type Clock, systemClock } from './shared/ids.ts';
import type { Balance } from './store/ledger-repo.ts';
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
  | { ok: false; reason: 'subscription_expired' | 'trial_expired' | 'insufficient_balance'; message: string };

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
}

/** Wires the domain services over a store; does no I/O until used. */
export function createServices(options: ServicesOptions): Services {
  const { config, store, logger } = options;
  const clock = options.clock ?? systemClock;
  const cache = new KeyCache();
  const bus = options.bus ?? createLocalBus();
  const mailer = options.mailer ?? (config.smtpUrl ? createSmtpMailer(config.smtpUrl, 'Tollgate <no-reply@tollgate.local>') : createLogMailer(logger));
  const accounts = new AccountsService({ store, config, clock, mailer, cache, bus, logger });
  const startedAt = clock();

  const planOf = (account: AccountRecord): PlanConfig => config.plans.get(account.plan) ?? (config.plans.get('free_trial') as PlanConfig);

  return {
    config,
    store,
    clock,
    logger,
    cache,
    bus,
    accounts,
    startedAt,
    limitsOf(account) {
      const plan = planOf(account);
      return {
        requestsPerMinute: account.rpmLimit ?? plan.requestsPerMinute,
        tokensPerMinute: account.tpmLimit ?? plan.tokensPerMinute,
        dailyTokens: account.dailyTokenLimit ?? plan.dailyTokens,
      };
    },
    billingStanding(account, balance, now) {
      const plan = planOf(account);
      if (account.planExpiresAt !== null && account.planExpiresAt <= now) {
        return {
          ok: false,
          reason: 'subscription_expired',
          message: `your ${plan.name} plan ended on ${new Date(account.planExpiresAt).toISOString()} without renewal; renew it or buy a plan`,
        };
      }
      if (balance.availableMicros > 0) return { ok: true };
      if (account.plan === 'free_trial' && balance.creditMicros <= 0) {
        return { ok: false, reason: 'trial_expired', message: 'your free trial credit has expired or is used up; buy a plan or top up' };
      }
      return { ok: false, reason: 'insufficient_balance', message: 'insufficient balance; top up or wait for requests in flight to finish' };
    },
    async guardSignup() {},
    async health() {
      let database: HealthReport['database'];
      try {
        database = { ok: true, dialect: store.db.dialect, latency_ms: round(await store.db.ping()) };
      } catch (error) {
        database = { ok: false, dialect: store.db.dialect, latency_ms: null, error: (error as Error).message };
      }
      return {
        status: database.ok ? 'ok' : 'down',
        version: VERSION,
        uptime_s: Math.round((clock() - startedAt) / 1000),
        database,
      };
    },
    async start() {},
    async close() {
      await bus.close();
    },
  };
}

const round = (ms: number): number => Math.round(ms * 1000) / 1000;
