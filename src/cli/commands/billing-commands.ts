import type { Command } from 'commander';
import { commandContext, resolveAccountId } from '../context.ts';
import { parseCount } from '../parse-arguments.ts';

/** `tollgate billing advance`: the test billing clock (test payment provider only). */
export function registerBillingCommands(program: Command): void {
  const billing = program
    .command('billing')
    .description('the billing cycle of a running gateway (test payment provider only)');

  billing
    .command('advance')
    .description(
      "move an account's billing time forward by whole days: renewals, retries and expiries due on the way run",
    )
    .argument('<account>', 'account id or e-mail address')
    .argument('<days>', 'days to move forward, 1-400', parseCount)
    .action(async (account: string, days: number, _options: unknown, command: Command) => {
      const { out, client } = commandContext(command);
      const id = await resolveAccountId(client, account);
      const answer = (await client.request('POST', '/api/admin/billing/advance', {
        account_id: id,
        days,
      })) as { billing_time: string; subscription: Record<string, unknown> | null };
      if (out.json) return out.printJson(answer);
      const sub = answer.subscription;
      out.line(`billing time of ${id}: ${answer.billing_time}`);
      if (sub)
        out.line(
          `subscription: ${String(sub['plan'])} ${String(sub['status'])}, period ends ${String(sub['current_period_end'])}`,
        );
      else out.line('no subscription');
    });
}
