import type { Command } from 'commander';
import { CliError } from '../cli-error.ts';
import { configuredDatabaseUrl } from '../database-url.ts';
import { createOutput, type Output } from '../output.ts';
import type { Db } from '../../store/db.ts';

/**
 * `tollgate migrate`: applies the pending migrations to DATABASE_URL and exits (as start does first).
 * `--status` changes nothing: it shows the applied and pending migrations, the schema's oldest allowed release
 * and the live instances with their releases.
 */
export function registerMigrateCommand(program: Command): void {
  program
    .command('migrate')
    .description('apply the pending database migrations to DATABASE_URL and exit')
    .option('--status', 'change nothing: show applied and pending migrations and the live instances')
    .action(async (options: { status?: boolean }, command: Command) => {
      const out = createOutput({ json: command.optsWithGlobals<{ json?: boolean }>().json === true });
      // Loaded on use: the store pulls in both database drivers, which no other command needs.
      const [databaseUrl, { migrate }, { openDb }] = await Promise.all([
        configuredDatabaseUrl(),
        import('../../store/migrate.ts'),
        import('../../store/store.ts'),
      ]);
      const db = openDb(databaseUrl);
      if (options.status) {
        try {
          return await printStatus(db, out);
        } catch (error) {
          throw new CliError(`cannot read the database: ${(error as Error).message}`, undefined, {
            cause: error,
          });
        } finally {
          await db.close();
        }
      }
      let applied: string[];
      try {
        applied = await migrate(db);
        const { recordOldestRelease } = await import('../../fleet/schema-check.ts');
        await recordOldestRelease(db);
      } catch (error) {
        throw new CliError(`migration failed: ${(error as Error).message}`, undefined, { cause: error });
      } finally {
        await db.close();
      }
      if (out.json) return out.printJson({ applied });
      out.line(applied.length === 0 ? 'the database is up to date' : `applied ${applied.join(', ')}`);
    });
}

async function printStatus(db: Db, out: Output): Promise<void> {
  const [{ migrationStatus }, { FleetRepo }, { RELEASE_VERSION, OLDEST_PEER_RELEASE }] = await Promise.all([
    import('../../store/migrate.ts'),
    import('../../store/fleet-repo.ts'),
    import('../../fleet/release.ts'),
  ]);
  const status = await migrationStatus(db);
  const fleet = new FleetRepo(db);
  const hasTables = status.applied.length + status.unknown.length > 0;
  const oldest = hasTables ? await fleet.oldestRelease() : undefined;
  const instances = hasTables ? await fleet.live(Date.now()).catch(() => []) : [];
  if (out.json)
    return out.printJson({
      release: RELEASE_VERSION,
      oldest_peer_release: OLDEST_PEER_RELEASE,
      schema_oldest_release: oldest ?? null,
      applied: status.applied.map((m) => ({
        version: m.version,
        applied_at: new Date(m.appliedAt).toISOString(),
      })),
      pending: status.pending,
      unknown: status.unknown.map((m) => ({
        version: m.version,
        applied_at: new Date(m.appliedAt).toISOString(),
      })),
      instances: instances.map((lease) => ({
        instance_id: lease.instanceId,
        release: lease.release,
        schema: lease.schema,
        oldest_peer: lease.oldestPeer,
        heartbeat_at: new Date(lease.heartbeatAt).toISOString(),
      })),
    });
  out.printFields([
    ['this release', `${RELEASE_VERSION} (runs beside ${OLDEST_PEER_RELEASE} and newer)`],
    [
      'schema allows',
      oldest ? `release ${oldest} and newer` : 'any release (no contract release migrated it yet)',
    ],
    ['applied', status.applied.length],
    ['pending', status.pending.length === 0 ? 'none' : status.pending.join(', ')],
    [
      'newer than this release',
      status.unknown.length === 0 ? 'none' : status.unknown.map((m) => m.version).join(', '),
    ],
  ]);
  out.line();
  out.printTable(
    ['migration', 'applied at'],
    [
      ...status.applied.map((m) => [m.version, new Date(m.appliedAt).toISOString()]),
      ...status.unknown.map((m) => [`${m.version} (newer)`, new Date(m.appliedAt).toISOString()]),
      ...status.pending.map((version) => [version, 'pending']),
    ],
  );
  out.line();
  if (instances.length === 0) return out.line('no live instances');
  out.printTable(
    ['instance', 'release', 'schema', 'runs beside', 'last heartbeat'],
    instances.map((lease) => [
      lease.instanceId,
      lease.release ?? 'before the version contract',
      lease.schema,
      lease.oldestPeer,
      new Date(lease.heartbeatAt).toISOString(),
    ]),
  );
}
