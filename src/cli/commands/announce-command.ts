import { type Command, Option } from 'commander';
import { commandContext, segment } from '../context.ts';
import { parseInstant, parseList } from '../parse-arguments.ts';

/** The API's severities (POST /api/admin/announcements), least serious first. */
const SEVERITIES = ['info', 'minor', 'major', 'critical'] as const;

interface AnnounceOptions {
  body: string;
  severity?: string;
  models?: string[];
  starts?: string;
  ends?: string;
  breaking?: boolean;
  effective?: string;
}

/** `tollgate announce <title>`: posts a notice to the status page (a breaking change also e-mails accounts). */
export function registerAnnounceCommand(program: Command): void {
  program
    .command('announce')
    .description(
      'post an announcement on the status page; --breaking with --effective (at least 90 days ahead) also e-mails every verified account',
    )
    .argument('<title>', 'the headline')
    .requiredOption('--body <text>', 'the text of the notice')
    .addOption(
      new Option('--severity <level>', 'how serious (default: critical with --breaking, else info)').choices(
        SEVERITIES,
      ),
    )
    .option('--models <ids>', 'affected public models, comma-separated', parseList)
    .option('--starts <time>', 'when it starts showing (default: now)', parseInstant)
    .option('--ends <time>', 'when it stops showing (default: until ended)', parseInstant)
    .option('--breaking', 'a breaking change: needs --effective')
    .option('--effective <time>', 'when the breaking change takes effect', parseInstant)
    .action(async (title: string, options: AnnounceOptions, command: Command) => {
      if (options.breaking === true && options.effective === undefined)
        command.error('error: --breaking needs --effective <time>', { exitCode: 2, code: 'tollgate.usage' });
      if (options.breaking !== true && options.effective !== undefined)
        command.error('error: --effective is only for --breaking notices', {
          exitCode: 2,
          code: 'tollgate.usage',
        });
      const { out, client } = commandContext(command);
      const notice = (await client.request('POST', '/api/admin/announcements', {
        title,
        body: options.body,
        // A breaking change is the most serious kind of notice unless the operator says otherwise.
        severity: options.severity ?? (options.breaking === true ? SEVERITIES.at(-1) : SEVERITIES[0]),
        models: options.models ?? [],
        breaking: options.breaking === true,
        ...(options.starts ? { starts_at: options.starts } : {}),
        ...(options.ends ? { ends_at: options.ends } : {}),
        ...(options.effective ? { effective_at: options.effective } : {}),
      })) as Record<string, unknown>;
      out.result(notice, `posted announcement ${String(notice['id'])}: ${title}`);
    });
}

/** `tollgate announcements list|end`: the notices posted so far, and ending one now. */
export function registerAnnouncementsCommands(program: Command): void {
  const announcements = program
    .command('announcements')
    .description('the notices on the status page: list them, end one');

  announcements
    .command('list')
    .description('list the announcements, current and past')
    .action(async (_options: unknown, command: Command) => {
      const { out, client } = commandContext(command);
      const list = (await client.request('GET', '/api/admin/announcements')) as {
        data: Record<string, unknown>[];
      };
      out.list(list, ['ID', 'SEVERITY', 'BREAKING', 'EFFECTIVE_AT', 'STARTS_AT', 'ENDS_AT', 'TITLE'], (n) => [
        n['id'],
        n['severity'],
        n['breaking'],
        n['effective_at'],
        n['starts_at'],
        n['ends_at'],
        n['title'],
      ]);
    });

  announcements
    .command('end')
    .description('end an announcement now (it leaves the status page)')
    .argument('<id>', 'the announcement id (from `tollgate announcements list`)')
    .action(async (id: string, _options: unknown, command: Command) => {
      const { out, client } = commandContext(command);
      const notice = await client.request('POST', `/api/admin/announcements/${segment(id)}/end`, {});
      out.result(notice, `ended announcement ${id}`);
    });
}
