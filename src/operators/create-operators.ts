import type { Logger } from 'pino';
import type { AccountsService } from '../accounts/accounts-service.ts';
import type { KeyCache } from '../accounts/key-cache.ts';
import type { Mailer } from '../accounts/mailer.ts';
import type { Config } from '../core/config.ts';
import type { Job, Scheduler } from '../jobs/scheduler.ts';
import type { Router } from '../routing/router.ts';
import type { Bus } from '../shared/bus.ts';
import { type Clock, newId } from '../core/ids.ts';
import type { AuditEntry } from '../store/audit-repo.ts';
import type { Store } from '../store/store.ts';
import type { WebhooksService } from '../webhooks/webhooks-service.ts';
import { AnnouncementsService } from './announcements-service.ts';
import { createMailQueueJob } from './mail-queue-job.ts';
import { OperatorAccounts } from './operator-accounts.ts';
import { OperatorReports } from './operator-reports.ts';
import { StatusSnapshot } from './status-snapshot.ts';

/** The operators’ side of Tollgate: accounts console, audit log, announcements, reports, status. */
export interface Operators {
  accounts: OperatorAccounts;
  announcements: AnnouncementsService;
  /** Statistics over time, deployments' health, the webhook backlog and redelivery, the usage export. */
  reports: OperatorReports;
  status: StatusSnapshot;
  /** Appends one row to the audit log (never changed afterwards). */
  audit(entry: Omit<AuditEntry, 'id' | 'at'>): Promise<void>;
  /** A page of the audit log, newest first, with the total that match. */
  auditLog(
    filter: { accountId?: string },
    limit: number,
    offset: number,
  ): Promise<{ entries: AuditEntry[]; total: number }>;
  /** The background jobs: the mail queue's sender and the health sampler (each on one instance). */
  jobs(): Job[];
}

export interface OperatorsOptions {
  store: Store;
  config: Config;
  clock: Clock;
  logger: Logger;
  mailer: Mailer;
  router: Router;
  accounts: AccountsService;
  cache: KeyCache;
  bus: Bus;
  scheduler: Scheduler;
  webhooks: WebhooksService;
  /** How long a status snapshot is served before it is rebuilt (tests shorten it). */
  statusRefreshMs?: number;
}

/** Wires the operators' services; does no I/O until used. */
export function createOperators(options: OperatorsOptions): Operators {
  const { store, config, clock, logger, scheduler } = options;
  const mailJob = createMailQueueJob(store, options.mailer, clock, logger);
  const mailQueued = (): void => scheduler.kick(mailJob);
  const status = new StatusSnapshot({
    store,
    router: options.router,
    clock,
    logger,
    models: config.models.keys(),
    ...(options.statusRefreshMs !== undefined ? { refreshMs: options.statusRefreshMs } : {}),
  });
  return {
    accounts: new OperatorAccounts({
      store,
      accounts: options.accounts,
      clock,
      cache: options.cache,
      bus: options.bus,
      mailQueued,
    }),
    announcements: new AnnouncementsService({ store, config, clock, mailQueued }),
    reports: new OperatorReports({ store, clock, router: options.router, webhooks: options.webhooks }),
    status,
    audit: (entry) => store.audit.append({ ...entry, id: newId('audit'), at: clock() }),
    auditLog: (filter, limit, offset) => store.audit.list(filter, limit, offset),
    jobs: () => [mailJob, status.sampleJob()],
  };
}
