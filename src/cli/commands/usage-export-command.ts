import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Readable, Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { type Command, Option } from 'commander';
import { CliError, EXIT } from '../cli-error.ts';
import { commandContext, resolveAccountId } from '../context.ts';
import { isBareDate, parseDateOrInstant } from '../parse-arguments.ts';
import { DAY_MS } from '../../core/time.ts';

interface ExportOptions {
  from: string;
  to: string;
  format: 'csv' | 'jsonl';
  account?: string;
  output?: string;
}

/** How often the progress line on a terminal is redrawn. */
const PROGRESS_INTERVAL_MS = 200;

/** `tollgate usage export`: streams usage records (never content) from the gateway to stdout or a file. */
export function registerUsageCommands(program: Command): void {
  const usage = program.command('usage').description('usage records of the gateway');
  usage
    .command('export')
    .description(
      'stream usage records (request id, account, key, model, status, tokens, cost; never content), oldest first',
    )
    .requiredOption(
      '--from <time>',
      'the start: a date (from its UTC midnight) or an ISO date-time, included',
      parseDateOrInstant,
    )
    .requiredOption(
      '--to <time>',
      'the end: a date includes that whole UTC day; a date-time is excluded',
      parseDateOrInstant,
    )
    .addOption(new Option('--format <format>', 'output format').choices(['csv', 'jsonl']).default('csv'))
    .option('--account <account>', 'only this account (id or e-mail address)')
    .option('-o, --output <file>', 'write to this file instead of stdout')
    .action(async (options: ExportOptions, command: Command) => {
      const endMs = Date.parse(options.to) + (isBareDate(options.to) ? DAY_MS : 0);
      if (Date.parse(options.from) >= endMs)
        command.error('error: --from must be before --to', { exitCode: EXIT.usage, code: 'tollgate.usage' });
      const { client } = commandContext(command);
      const query = new URLSearchParams({ from: options.from, to: options.to, format: options.format });
      if (options.account) query.set('account_id', await resolveAccountId(client, options.account));
      const response = await client.stream(`/api/admin/usage/export?${query.toString()}`);
      if (!response.body) throw new CliError('the gateway sent an empty export');
      const progress = createProgress(options.format, process.stderr);
      const destination: Writable = options.output ? createWriteStream(options.output) : process.stdout;
      try {
        await pipeline(
          Readable.fromWeb(response.body as WebReadableStream<Uint8Array>),
          progress.counter,
          destination,
        );
      } catch (error) {
        // A reader that stopped early (`| head`) is not a failure.
        if (!options.output && (error as NodeJS.ErrnoException).code === 'EPIPE') return;
        if (options.output) await rm(options.output, { force: true });
        throw new CliError(`the export stopped: ${(error as Error).message}`, EXIT.failed, { cause: error });
      } finally {
        progress.stop();
      }
      if (options.output)
        process.stderr.write(`wrote ${progress.rows()} ${options.format} rows to ${options.output}\n`);
    });
}

/** Counts exported rows as they pass; redraws one line on stderr when stderr is a terminal. */
function createProgress(
  format: 'csv' | 'jsonl',
  stderr: NodeJS.WriteStream,
): { counter: Transform; rows(): number; stop(): void } {
  let lines = 0;
  let bytes = 0;
  // csv's first line is its header.
  const rows = (): number => Math.max(0, format === 'csv' ? lines - 1 : lines);
  const size = (): string =>
    bytes < 1e6 ? `${Math.ceil(bytes / 1e3)} kB` : `${(bytes / 1e6).toFixed(1)} MB`;
  const draw = (): void => void stderr.write(`\r${rows().toLocaleString('en')} rows, ${size()}`);
  const timer = stderr.isTTY ? setInterval(draw, PROGRESS_INTERVAL_MS) : undefined;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines++;
      done(null, chunk);
    },
  });
  return {
    counter,
    rows,
    stop() {
      if (!timer) return;
      clearInterval(timer);
      draw();
      stderr.write('\n');
    },
  };
}
