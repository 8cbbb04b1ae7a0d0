import type { Logger } from 'pino';
import type { Db } from '../store/db.ts';
import { FleetRepo } from '../store/fleet-repo.ts';
import { migrationStatus } from '../store/migrate.ts';
import { SEEN_EVERY_MS } from './fleet-watch.ts';
import { compareReleases, OLDEST_PEER_RELEASE, RELEASE_VERSION } from './release.ts';

/** The migration that brought the version contract: a database without it was last written before it. */
export const CONTRACT_MIGRATION = '009-fleet-versions';

/** This release must not start on this database (the message says why and how to force it). */
export class VersionRefusal extends Error {
  override name = 'VersionRefusal';
}

/**
 * Before migrating: refuses to start on a schema a newer release migrated and that needs a newer release than
 * this one (unless `force`), and warns loudly when the database was last written by a release from before the
 * version contract. `release` is this release (tests pass an older one).
 */
export async function checkSchemaBeforeStart(
  db: Db,
  options: { logger: Logger; force: boolean; release?: string },
): Promise<void> {
  const { logger, force } = options;
  const release = options.release ?? RELEASE_VERSION;
  const status = await migrationStatus(db);
  const newer = status.unknown.map((m) => m.version);
  const hasSettings = status.applied.length > 0 || newer.length > 0;
  const oldest = hasSettings ? await new FleetRepo(db).oldestRelease() : undefined;
  if (oldest !== undefined && compareReleases(release, oldest) < 0) {
    const what = newer.length > 0 ? ` (migrations ${newer.join(', ')})` : '';
    const message = `the database schema is newer than release ${release} understands${what} and needs release ${oldest} or newer; start that release, or set TOLLGATE_FORCE_VERSION=1 (tollgate start --force-version) to start this one anyway (docs/operations.md, "Rolling back")`;
    if (!force) throw new VersionRefusal(message);
    logger.warn({ migrations: newer, needs: oldest }, `forced start: ${message}`);
  } else if (newer.length > 0) {
    logger.warn(
      { migrations: newer, oldest_release: oldest ?? null },
      'the database schema is newer than this release knows; the release that migrated it allows this one beside it',
    );
  }
  const contract = status.applied.some((m) => m.version === CONTRACT_MIGRATION);
  if (contract) return warnOfUnknownWriters(db, logger);
  if (status.applied.length > 0 && (await new FleetRepo(db).hasAccounts()))
    logger.warn(
      { schema: status.applied.at(-1)?.version ?? null },
      `THIS DATABASE WAS LAST WRITTEN BY A RELEASE FROM BEFORE THE VERSION CONTRACT. Only release 0.1.0 with migration 008 (008-ledger-version) may keep running beside this one; stop every instance of an older release now (docs/operations.md, "Upgrades")`,
    );
}

/** After migrating: the schema allows no release older than the oldest this one runs beside. */
export async function recordOldestRelease(db: Db, oldestPeer: string = OLDEST_PEER_RELEASE): Promise<void> {
  await new FleetRepo(db).raiseOldestRelease(oldestPeer, (a, b) => compareReleases(a, b) > 0);
}

/** Slack over the once-a-minute note, so a contract instance's own last writes never count as unknown. */
const UNKNOWN_AFTER_MS = 2 * SEEN_EVERY_MS;

/**
 * Accounts or usage written well after the last contract instance was seen alive were written by a release that
 * does not know the contract (a rollback to a release before it): said loudly, once, at start-up.
 */
async function warnOfUnknownWriters(db: Db, logger: Logger): Promise<void> {
  const fleet = new FleetRepo(db);
  const [seen, activity] = await Promise.all([fleet.lastSeen(), fleet.lastActivity()]);
  if (seen === undefined || activity === undefined || activity <= seen + UNKNOWN_AFTER_MS) return;
  logger.warn(
    {
      last_contract_instance_at: new Date(seen).toISOString(),
      last_write_at: new Date(activity).toISOString(),
    },
    'THIS DATABASE WAS WRITTEN BY A RELEASE THAT DOES NOT KNOW THE VERSION CONTRACT after the last instance that knows it stopped (a rollback to a release before 0.2.0?): accounts registered and requests billed meanwhile followed that release\'s rules (docs/operations.md, "Rolling back")',
  );
}
