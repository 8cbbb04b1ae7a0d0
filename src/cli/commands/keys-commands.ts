import type { Command } from 'commander';
import { commandContext, resolveAccountId, segment } from '../context.ts';

/** `tollgate keys list|revoke`: an account's API keys through the admin API. */
export function registerKeysCommands(program: Command): void {
  const keys = program.command('keys').description("list and revoke an account's API keys");

  keys
    .command('list')
    .description("list an account's API keys (never their secrets)")
    .argument('<account>', 'account id or e-mail address')
    .action(async (account: string, _options: unknown, command: Command) => {
      const { out, client } = commandContext(command);
      const id = await resolveAccountId(client, account);
      const list = (await client.request('GET', `/api/admin/accounts/${segment(id)}/keys`)) as {
        data: Record<string, unknown>[];
      };
      out.list(list, ['ID', 'NAME', 'PREFIX', 'STATUS', 'CREATED_AT', 'REVOKED_AT'], (k) => [
        k['id'],
        k['name'],
        k['prefix'],
        k['status'],
        k['created_at'],
        k['revoked_at'],
      ]);
    });

  keys
    .command('revoke')
    .description('revoke one API key of an account: its next request is refused')
    .argument('<account>', 'account id or e-mail address')
    .argument('<key-id>', 'the key id (from `tollgate keys list`)')
    .action(async (account: string, keyId: string, _options: unknown, command: Command) => {
      const { out, client } = commandContext(command);
      const id = await resolveAccountId(client, account);
      const key = await client.request('DELETE', `/api/admin/accounts/${segment(id)}/keys/${segment(keyId)}`);
      out.result(key, `revoked key ${keyId} of ${id}`);
    });
}
