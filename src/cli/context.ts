import type { Command } from 'commander';
import { type AdminClient, createAdminClient } from './admin-client.ts';
import { CliError } from './cli-error.ts';
import { createOutput, type Output } from './output.ts';

export const DEFAULT_URL = 'http://127.0.0.1:8080';

export interface CommandContext {
  out: Output;
  client: AdminClient;
}

/** What every command's action needs: the output (with --json) and a client of the gateway at --url. */
export function commandContext(command: Command): CommandContext {
  const globals = command.optsWithGlobals<{ url?: string; json?: boolean }>();
  return {
    out: createOutput({ json: globals.json === true }),
    client: createAdminClient({ url: globals.url ?? DEFAULT_URL, key: process.env['TOLLGATE_ADMIN_KEY'] }),
  };
}

/**
 * Resolves an account argument to its id: an id passes through, an e-mail address is looked up and must match
 * exactly one account.
 */
export async function resolveAccountId(client: AdminClient, account: string): Promise<string> {
  if (!account.includes('@')) return account;
  const page = (await client.request(
    'GET',
    `/api/admin/accounts?${new URLSearchParams({ search: account, limit: '500' }).toString()}`,
  )) as { data?: { id: string; email: string }[] };
  const wanted = account.toLowerCase();
  const found = (page.data ?? []).filter((candidate) => candidate.email.toLowerCase() === wanted);
  if (found.length === 0 || !found[0]) throw new CliError(`no account has the e-mail address ${account}`);
  return found[0].id;
}

/** An account id or e-mail as one path segment. */
export const segment = encodeURIComponent;
