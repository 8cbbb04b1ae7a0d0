import type { Db } from '../store/db.ts';

/** Providers that ignore dots in the local part and treat googlemail.com as gmail.com. */
const DOTLESS_DOMAINS = new Set(['gmail.com', 'googlemail.com']);

/**
 * The mailbox an address delivers to, for the one-trial-per-mailbox rule: lower-case, without a `+tag`
 * (every major provider delivers `name+tag@` to `name@`), and at Gmail without dots. Other separators
 * (Yahoo's `-`, Fastmail's subdomains) are left alone: at other providers they name different mailboxes.
 */
export function canonicalMailbox(email: string): string {
  const address = email.trim().toLowerCase();
  const at = address.lastIndexOf('@');
  if (at <= 0) return address;
  let local = address.slice(0, at);
  let domain = address.slice(at + 1);
  const plus = local.indexOf('+');
  if (plus > 0) local = local.slice(0, plus);
  if (DOTLESS_DOMAINS.has(domain)) {
    local = local.replaceAll('.', '');
    domain = 'gmail.com';
  }
  return `${local}@${domain}`;
}

/** Records that a mailbox took its trial; false when it already had one (table trial_mailboxes, 003). */
export async function claimTrialMailbox(
  db: Db,
  mailbox: string,
  accountId: string,
  now: number,
): Promise<boolean> {
  const changed = await db.run(
    'INSERT INTO trial_mailboxes (mailbox, account_id, created_at) VALUES ($1, $2, $3) ON CONFLICT (mailbox) DO NOTHING',
    [mailbox, accountId, now],
  );
  return changed === 1;
}
