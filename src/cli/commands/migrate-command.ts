import type { Command } from 'commander';
import { CliError } from '../cli-error.ts';
import { createOutput } from '../output.ts';

/** `tollgate migrate`: applies the pending migrations to DATABASE_URL and exits (as start does first). */
export function registerMigrateCommand(program: Command): void {
  program
    .command('migrate')
    .description('apply the pending database migrations to DATABASE_URL and exit')
    .action(async (_options: unknown, command: Command) => {
      const out = createOutput({ json: command.optsWithGlobals<{ json?: boolean }>().json === true });
      // Loaded on use: the store pulls in both database drivers, which no other command needs.
      const [{ ConfigError, loadConfig }, { migrate }, { openDb }] = await Promise.all([
        import('../../config/load-config.ts'),
        import('../../store/migrate.ts'),
        import('../../store/store.ts'),
      ]);
      let databaseUrl: string;
      try {
        databaseUrl = loadConfig().databaseUrl;
      } catch (error) {
        if (error instanceof ConfigError) throw new CliError(`configuration error: ${error.message}`);
        throw error;
      }
      const db = openDb(databaseUrl);
      let applied: string[];
      try {
        applied = await migrate(db);
      } catch (error) {
        throw new CliError(`migration failed: ${(error as Error).message}`, undefined, { cause: error });
      } finally {
        await db.close();
      }
      if (out.json) return out.printJson({ applied });
      out.line(applied.length === 0 ? 'the database is up to date' : `applied ${applied.join(', ')}`);
    });
}
