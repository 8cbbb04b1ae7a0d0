import { newId } from '../core/ids.ts';
import type { LedgerRepo } from '../store/ledger-repo.ts';
import type { CreditGrant, GrantKind } from '../core/records.ts';

/** A grant to make: what kind, how much (integer µUSD), until when, and what caused it. */
export interface GrantRequest {
  accountId: string;
  kind: GrantKind;
  amountMicros: number;
  expiresAt: number;
  /** What caused it: `registration`, `admin`, an order id. */
  source: string;
  now: number;
}

/**
 * Adds a credit grant, unspent, to the account's balance; resolves to it. The one place a grant is made (trial,
 * plan allowance, top-up, operator's credit): pass a transaction's ledger to make it with what caused it.
 */
export async function grantCredit(ledger: LedgerRepo, request: GrantRequest): Promise<CreditGrant> {
  const grant: CreditGrant = {
    id: newId('grant'),
    accountId: request.accountId,
    kind: request.kind,
    amountMicros: request.amountMicros,
    remainingMicros: request.amountMicros,
    expiresAt: request.expiresAt,
    createdAt: request.now,
    source: request.source,
  };
  await ledger.addGrant(grant);
  return grant;
}
