import { resolve } from 'node:path';
import type { Command } from 'commander';
import { CliError } from '../cli-error.ts';
import { configuredDatabaseUrl } from '../database-url.ts';
import { createOutput } from '../output.ts';

/** `tollgate backup <file>`: an online copy of the embedded SQLite store named by DATABASE_URL. */
export function registerBackupCommand(program: Command): void {
  program
    .command('backup')
    .description('copy the embedded SQLite database (DATABASE_URL) to <file> while the gateway runs')
    .argument('<file>', 'the backup file to create (never overwritten)')
    .action(async (file: string, _options: unknown, command: Command) => {
      const out = createOutput({ json: command.optsWithGlobals<{ json?: boolean }>().json === true });
      // Loaded on use, as for migrate: no other command needs the store.
      const [databaseUrl, { backupSqlite }] = await Promise.all([
        configuredDatabaseUrl(),
        import('../../store/sqlite/backup-sqlite.ts'),
      ]);
      if (/^postgres(ql)?:/.test(databaseUrl))
        throw new CliError(
          'DATABASE_URL is PostgreSQL: back it up with pg_dump (docs/operations.md, "Back up and restore")',
        );
      const source = databaseUrl.replace(/^sqlite:(\/\/)?/, '');
      if (source === '' || source === ':memory:')
        throw new CliError('DATABASE_URL is an in-memory database: there is nothing to back up');
      const destination = resolve(file);
      let copy;
      try {
        copy = await backupSqlite(resolve(source), destination);
      } catch (error) {
        throw new CliError(`backup failed: ${(error as Error).message}`, undefined, { cause: error });
      }
      if (out.json) return out.printJson({ source: resolve(source), destination, ...copy });
      out.line(
        `backed up ${resolve(source)} to ${destination} (${copy.bytes} bytes, ${copy.migrations} migrations applied)`,
      );
    });
}
