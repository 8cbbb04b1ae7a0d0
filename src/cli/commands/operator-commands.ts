import type { Command } from 'commander';
import { commandContext, resolveAccountId, segment } from '../context.ts';

/** `tollgate operator create|list|remove`: who may use the operator console and admin API. */
export function registerOperatorCommands(program: Command): void {
  const operator = program
    .command('operator')
    .description('grant or take back the operator role (console and admin API access)');

  operator
    .command('create')
    .description('make an existing account an operator (it registers first, then signs in as usual)')
    .argument('<email>', "the account's e-mail address")
    .action(async (email: string, _options: unknown, command: Command) => {
      const { out, client } = commandContext(command);
      const account = (await client.request('POST', '/api/admin/operators', { email })) as Record<
        string,
        unknown
      >;
      out.result(account, `${String(account['email'])} (${String(account['id'])}) is now an operator`);
    });

  operator
    .command('list')
    .description('list the operator accounts')
    .action(async (_options: unknown, command: Command) => {
      const { out, client } = commandContext(command);
      const list = (await client.request('GET', '/api/admin/operators')) as {
        data: Record<string, unknown>[];
      };
      out.list(list, ['ID', 'EMAIL', 'STATUS', 'CREATED_AT'], (a) => [
        a['id'],
        a['email'],
        a['status'],
        a['created_at'],
      ]);
    });

  operator
    .command('remove')
    .description('take the operator role back (the account stays, as a user)')
    .argument('<account>', 'account id or e-mail address')
    .action(async (account: string, _options: unknown, command: Command) => {
      const { out, client } = commandContext(command);
      const id = await resolveAccountId(client, account);
      const answer = await client.request('DELETE', `/api/admin/operators/${segment(id)}`);
      out.result(answer, `${id} is no longer an operator`);
    });
}
