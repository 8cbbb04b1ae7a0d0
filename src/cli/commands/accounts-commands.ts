import { type Command, Option } from 'commander';
import type { AdminClient } from '../admin-client.ts';
import { CliError } from '../cli-error.ts';
import { commandContext, resolveAccountId, segment } from '../context.ts';
import type { Output } from '../output.ts';
import { parseAmountUsd, parseCount, parseInstant } from '../parse-arguments.ts';

type Account = Record<string, unknown>;

/** `tollgate accounts list|show|suspend|unsuspend|grant|set-plan`: the admin API's account controls. */
export function registerAccountsCommands(program: Command): void {
  const accounts = program
    .command('accounts')
    .description('find and manage accounts through the admin API of a running gateway');

  accounts
    .command('list')
    .description('list accounts, newest first (one page; --limit and --offset page on)')
    .option('--search <text>', 'e-mail substring or exact account id')
    .option('--plan <plan>', 'only accounts on this plan (free_trial, starter, pro, enterprise)')
    .addOption(
      new Option('--status <status>', 'only accounts in this state').choices(['active', 'suspended']),
    )
    .addOption(new Option('--sort <field>', 'sort field').choices(['created_at', 'email', 'last_active_at']))
    .addOption(new Option('--order <order>', 'sort order').choices(['desc', 'asc']))
    .option('--limit <n>', 'accounts per page, 1-500', parseCount, 50)
    .option('--offset <n>', 'accounts to skip', parseCount, 0)
    .action(async (options: Record<string, string | number | undefined>, command: Command) => {
      const { out, client } = commandContext(command);
      const query = new URLSearchParams();
      for (const name of ['search', 'plan', 'status', 'sort', 'order', 'limit', 'offset']) {
        const value = options[name];
        if (value !== undefined) query.set(name, String(value));
      }
      const page = (await client.request('GET', `/api/admin/accounts?${query.toString()}`)) as {
        data: Account[];
        total: number;
        offset: number;
      };
      if (out.json) return out.printJson(page);
      out.printTable(
        ['ID', 'EMAIL', 'PLAN', 'STATUS', 'BALANCE_USD', 'CREATED_AT'],
        page.data.map((a) => [
          a['id'],
          a['email'],
          a['plan'],
          a['status'],
          a['balance_usd'],
          a['created_at'],
        ]),
      );
      const first = page.data.length === 0 ? 0 : page.offset + 1;
      out.line(out.style('dim', `${first}-${page.offset + page.data.length} of ${page.total}`));
    });

  accounts
    .command('show')
    .description('show an account: status, plan, balance, limits, and its credit grants and keys')
    .argument('<account>', 'account id or e-mail address')
    .action(async (account: string, _options: unknown, command: Command) => {
      const { out, client } = commandContext(command);
      const id = await resolveAccountId(client, account);
      const detail = await accountDetail(client, id);
      if (out.json) return out.printJson(detail);
      const days = detail.usage?.last_30_days;
      const sum = (field: string): number =>
        (days ?? []).reduce((total, day) => total + (typeof day[field] === 'number' ? day[field] : 0), 0);
      const usage = `${sum('requests')} requests, ${sum('tokens')} tokens, $${Math.round(sum('cost_usd') * 1e6) / 1e6}`;
      printAccount(out, detail.account, days ? [['usage_30_days', usage]] : []);
      if (detail.credits && detail.credits.length > 0) {
        out.line();
        out.printTable(
          ['GRANT', 'KIND', 'AMOUNT_USD', 'REMAINING_USD', 'EXPIRES_AT'],
          detail.credits.map((c) => [
            c['id'],
            c['kind'],
            c['amount_usd'],
            c['remaining_usd'],
            c['expires_at'],
          ]),
        );
      }
      if (detail.keys && detail.keys.length > 0) {
        out.line();
        out.printTable(
          ['KEY', 'NAME', 'PREFIX', 'STATUS', 'CREATED_AT'],
          detail.keys.map((k) => [k['id'], k['name'], k['prefix'], k['status'], k['created_at']]),
        );
      }
    });

  accounts
    .command('suspend')
    .description('suspend an account: its keys and sessions are refused until it is unsuspended')
    .argument('<account>', 'account id or e-mail address')
    .option('--reason <text>', 'why (kept with the account and in the audit log)')
    .action(async (account: string, options: { reason?: string }, command: Command) => {
      const { out, client } = commandContext(command);
      const id = await resolveAccountId(client, account);
      const body = options.reason === undefined ? {} : { reason: options.reason };
      const answer = await client.request('POST', `/api/admin/accounts/${segment(id)}/suspend`, body);
      out.result(answer, `suspended ${id}`);
    });

  accounts
    .command('unsuspend')
    .description('lift a suspension')
    .argument('<account>', 'account id or e-mail address')
    .action(async (account: string, _options: unknown, command: Command) => {
      const { out, client } = commandContext(command);
      const id = await resolveAccountId(client, account);
      const answer = await client.request('POST', `/api/admin/accounts/${segment(id)}/unsuspend`, {});
      out.result(answer, `unsuspended ${id}`);
    });

  accounts
    .command('grant')
    .description('grant credit to an account (an admin grant; expires in a year unless --expires says)')
    .argument('<account>', 'account id or e-mail address')
    .argument('<amount_usd>', 'credit in USD, e.g. 25 or 2.50', parseAmountUsd)
    .option(
      '--expires <time>',
      'when the grant expires: an ISO date or date-time in the future',
      parseInstant,
    )
    .action(async (account: string, amountUsd: number, options: { expires?: string }, command: Command) => {
      const { out, client } = commandContext(command);
      const id = await resolveAccountId(client, account);
      const body = { amount_usd: amountUsd, ...(options.expires ? { expires_at: options.expires } : {}) };
      const grant = (await client.request(
        'POST',
        `/api/admin/accounts/${segment(id)}/credits`,
        body,
      )) as Account;
      out.result(
        grant,
        `granted $${String(grant['amount_usd'])} to ${id} (grant ${String(grant['id'])}, expires ${String(grant['expires_at'])})`,
      );
    });

  accounts
    .command('set-plan')
    .description("change an account's plan")
    .argument('<account>', 'account id or e-mail address')
    .argument('<plan>', 'free_trial, starter, pro or enterprise')
    .action(async (account: string, plan: string, _options: unknown, command: Command) => {
      const { out, client } = commandContext(command);
      const id = await resolveAccountId(client, account);
      const answer = await client.request('PUT', `/api/admin/accounts/${segment(id)}/plan`, { plan });
      out.result(answer, `${id} is on plan ${plan}`);
    });
}

interface AccountDetail {
  account: Account;
  credits?: Account[];
  keys?: Account[];
  usage?: { last_30_days?: Record<string, unknown>[] };
}

/** The account's detail page; a gateway without `/detail` (older) answers with the account alone. */
async function accountDetail(client: AdminClient, id: string): Promise<AccountDetail> {
  try {
    return (await client.request('GET', `/api/admin/accounts/${segment(id)}/detail`)) as AccountDetail;
  } catch (error) {
    if (!(error instanceof CliError) || error.status !== 404) throw error;
    return { account: (await client.request('GET', `/api/admin/accounts/${segment(id)}`)) as Account };
  }
}

/** An account as aligned fields. */
export function printAccount(
  out: Output,
  account: Account,
  extra: readonly (readonly [string, unknown])[] = [],
): void {
  const limits = (account['limits_override'] ?? {}) as Record<string, unknown>;
  out.printFields([
    ['id', account['id']],
    ['email', account['email']],
    ['email_verified', account['email_verified']],
    ['role', account['role']],
    ['status', account['status']],
    ['suspended_reason', account['suspended_reason']],
    ['plan', account['plan']],
    ['plan_expires_at', account['plan_expires_at']],
    ['balance_usd', account['balance_usd']],
    ['credit_limit_usd', account['credit_limit_usd']],
    [
      'limits_override',
      `rpm ${cellOf(limits['rpm'])}, tpm ${cellOf(limits['tpm'])}, daily_tokens ${cellOf(limits['daily_tokens'])}`,
    ],
    ['created_at', account['created_at']],
    ['last_active_at', account['last_active_at']],
    ...extra,
  ]);
}

function cellOf(value: unknown): string {
  return typeof value === 'number' ? String(value) : '-';
}
