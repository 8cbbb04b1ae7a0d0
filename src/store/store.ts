import type { SecretBox } from '../shared/secret-box.ts';
import { AccountsRepo } from './accounts-repo.ts';
import type { Db } from './db.ts';
import { LedgerRepo } from './ledger-repo.ts';
import { createPostgresDb } from './postgres/postgres-db.ts';
import { createSqliteDb } from './sqlite/sqlite-db.ts';
import { SystemRepo } from './system-repo.ts';
import { UsageRepo } from './usage-repo.ts';
import { PaymentsRepo } from './payments-repo.ts';
import { SessionsRepo } from './sessions-repo.ts';
import { WebhooksRepo } from './webhooks-repo.ts';
import { AdminAccountsRepo } from './admin-accounts-repo.ts';
import { AdminReportsRepo } from './admin-reports-repo.ts';
import { AnnouncementsRepo } from './announcements-repo.ts';
import { AuditRepo } from './audit-repo.ts';
import { HealthSamplesRepo } from './health-samples-repo.ts';
import { MailQueueRepo } from './mail-queue-repo.ts';
import { FleetRepo } from './fleet-repo.ts';
import { MembersRepo } from './members-repo.ts';
import { BillingRepo } from './billing-repo.ts';

/** Everything Tollgate keeps, by domain; the same SQL runs on SQLite and PostgreSQL. */
export interface Store {
  readonly db: Db;
  readonly accounts: AccountsRepo;
  readonly ledger: LedgerRepo;
  readonly usage: UsageRepo;
  readonly payments: PaymentsRepo;
  readonly webhooks: WebhooksRepo;
  readonly system: SystemRepo;
  readonly sessions: SessionsRepo;
  /** Operators: their account reads, reports, audit log, announcements, mail, health samples. */
  readonly adminAccounts: AdminAccountsRepo;
  readonly adminReports: AdminReportsRepo;
  readonly audit: AuditRepo;
  readonly announcements: AnnouncementsRepo;
  readonly mailQueue: MailQueueRepo;
  readonly healthSamples: HealthSamplesRepo;
  /** The version contract's leases and the schema's oldest allowed release. */
  readonly fleet: FleetRepo;
  /** Organizations' members and invitations. */
  readonly members: MembersRepo;
  readonly billing: BillingRepo;
  /** Runs fn with a store whose every repository works inside one transaction. */
  transaction<T>(fn: (store: Store) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** What the chat request path reads: a key's spend (db), an account's balance, a key's tokens today. */
export interface ChatPathStore {
  readonly db: Pick<Db, 'get'>;
  readonly ledger: Pick<LedgerRepo, 'balance'>;
  readonly usage: Pick<UsageRepo, 'keyDayTokens'>;
}

/** Builds the store over an open database; `secrets` seals webhook signing secrets at rest. */
export function createStore(db: Db, options: { secrets?: SecretBox } = {}): Store {
  return {
    db,
    accounts: new AccountsRepo(db),
    ledger: new LedgerRepo(db),
    usage: new UsageRepo(db),
    payments: new PaymentsRepo(db),
    webhooks: new WebhooksRepo(db, options.secrets),
    system: new SystemRepo(db),
    sessions: new SessionsRepo(db),
    adminAccounts: new AdminAccountsRepo(db),
    adminReports: new AdminReportsRepo(db),
    audit: new AuditRepo(db),
    announcements: new AnnouncementsRepo(db),
    mailQueue: new MailQueueRepo(db),
    healthSamples: new HealthSamplesRepo(db),
    fleet: new FleetRepo(db),
    members: new MembersRepo(db),
    billing: new BillingRepo(db),
    transaction: (fn) => db.transaction((tx) => fn(createStore(tx, options))),
    close: () => db.close(),
  };
}

/** Opens the database a `DATABASE_URL` names: `sqlite:<path>` (or a bare path) or `postgres://…`. */
export function openDb(databaseUrl: string, options: { schema?: string } = {}): Db {
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) {
    return createPostgresDb({
      connectionString: databaseUrl,
      ...(options.schema ? { schema: options.schema } : {}),
    });
  }
  const path = databaseUrl.replace(/^sqlite:(\/\/)?/, '');
  return createSqliteDb(path === '' ? ':memory:' : path);
}
