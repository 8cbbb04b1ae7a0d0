import { styleText } from 'node:util';
import { Command, CommanderError, Option } from 'commander';
import packageJson from '../../package.json' with { type: 'json' };
import { CliError, EXIT } from './cli-error.ts';
import { printable } from './terminal-text.ts';
import { registerAccountsCommands } from './commands/accounts-commands.ts';
import { registerBillingCommands } from './commands/billing-commands.ts';
import { registerAnnounceCommand, registerAnnouncementsCommands } from './commands/announce-command.ts';
import { registerBackupCommand } from './commands/backup-command.ts';
import { registerConfigCommands } from './commands/config-check-command.ts';
import { registerKeysCommands } from './commands/keys-commands.ts';
import { registerMigrateCommand } from './commands/migrate-command.ts';
import { registerOperatorCommands } from './commands/operator-commands.ts';
import { registerStartCommand } from './commands/start-command.ts';
import { registerUsageCommands } from './commands/usage-export-command.ts';
import { DEFAULT_URL } from './context.ts';

const AFTER_HELP = `
Environment:
  TOLLGATE_URL        the gateway --url defaults to (default ${DEFAULT_URL})
  TOLLGATE_ADMIN_KEY  the admin key (or an operator's API key) for the commands that call the gateway
  DATABASE_URL, TOLLGATE_CONFIG and the gateway's other variables for start, migrate, backup and config check
  NO_COLOR            no colour even on a terminal

Exit codes:
  0  done
  1  the gateway refused the request, or the operation failed (invalid config, failed migration)
  2  bad usage: unknown command or option, missing or malformed argument
  3  no gateway answered at --url
  4  the admin key is missing or was refused (401/403)`;

/** The `tollgate` command tree; every command has --help, the account commands share --url and --json. */
export function createProgram(): Command {
  const program = new Command('tollgate')
    .description("Tollgate's operator command line: run the gateway, check its config, manage accounts")
    .version(packageJson.version)
    .addOption(new Option('--url <url>', 'the gateway to talk to').env('TOLLGATE_URL').default(DEFAULT_URL))
    .option('--json', 'print JSON for scripts instead of text')
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .showHelpAfterError('(add --help for usage)')
    .exitOverride()
    .addHelpText('after', AFTER_HELP);
  registerStartCommand(program);
  registerMigrateCommand(program);
  registerBackupCommand(program);
  registerConfigCommands(program);
  registerOperatorCommands(program);
  registerAccountsCommands(program);
  registerBillingCommands(program);
  registerKeysCommands(program);
  registerUsageCommands(program);
  registerAnnounceCommand(program);
  registerAnnouncementsCommands(program);
  return program;
}

/** Runs the CLI on `argv` (node's, with the two leading entries); resolves to the exit code. */
export async function runCli(argv: readonly string[]): Promise<number> {
  try {
    await createProgram().parseAsync(argv);
    return EXIT.ok;
  } catch (error) {
    // Commander has printed its own message (or the help) already.
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    const failure =
      error instanceof CliError
        ? error
        : new CliError(`failed: ${(error as Error).message ?? String(error)}`);
    if (failure.message)
      process.stderr.write(
        `${styleText('red', 'tollgate:', { stream: process.stderr })} ${printable(failure.message)}\n`,
      );
    return failure.exitCode;
  }
}

// A reader that stopped early (`tollgate accounts list | head`) ends the output, not with a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(EXIT.ok);
});
process.exitCode = await runCli(process.argv);
