import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { Command } from 'commander';
import { ownModulePath } from '../../shared/own-module.ts';
import { CliError } from '../cli-error.ts';

const MAIN = ownModulePath('../../main.ts', import.meta.url);
const V8_FLAGS = ['--max-semi-space-size=4', '--heap-growing-percent=50'];

/** `tollgate start`: runs the gateway as `npm start` does, in a child process that gets our signals. */
export function registerStartCommand(program: Command): void {
  program
    .command('start')
    .description('run the gateway (as npm start): configuration from the environment and TOLLGATE_CONFIG')
    .option('--config <file>', 'the YAML configuration file (instead of the one TOLLGATE_CONFIG names)')
    .option('--port <port>', 'the port to listen on (sets PORT)')
    .option('--host <host>', 'the address to listen on (sets HOST)')
    .option(
      '--force-version',
      'start on a schema that needs a newer release, and keep running beside a newer release (sets TOLLGATE_FORCE_VERSION)',
    )
    .action(async (options: { config?: string; port?: string; host?: string; forceVersion?: boolean }) => {
      const env: NodeJS.ProcessEnv = { MALLOC_ARENA_MAX: '2', ...process.env };
      if (options.forceVersion) env['TOLLGATE_FORCE_VERSION'] = '1';
      if (options.port !== undefined) env['PORT'] = options.port;
      if (options.host !== undefined) env['HOST'] = options.host;
      // The gateway is told the file came from --config, so its messages blame that and not TOLLGATE_CONFIG.
      const config = options.config === undefined ? [] : ['--config', options.config];
      // The V8 flags of package.json's start script (docs/decisions.md, "V8's heap under 10,000 open streams").
      const child = spawn(process.execPath, [...V8_FLAGS, MAIN, ...config], {
        env,
        stdio: 'inherit',
      });
      const forward = (signal: NodeJS.Signals): void => void child.kill(signal);
      process.on('SIGINT', forward);
      process.on('SIGTERM', forward);
      const code = await new Promise<number>((resolve, reject) => {
        child.once('error', (error) => reject(new CliError(`cannot start the gateway: ${error.message}`)));
        child.once('exit', (exitCode, signal) =>
          resolve(exitCode ?? (signal ? 128 + constants.signals[signal] : 1)),
        );
      });
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
      // The gateway printed its own reason; we only pass its exit code on.
      if (code !== 0) throw new CliError('', code);
    });
}
