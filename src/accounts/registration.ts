import type { Logger } from 'pino';
import { grantCredit } from '../billing/grant-credit.ts';
import type { Config } from '../core/config.ts';
import { GatewayError } from '../core/gateway-error.ts';
import { type Clock, newId } from '../core/ids.ts';
import { DAY_MS } from '../core/time.ts';
import { type AccountRecord, newAccountRecord } from '../core/records.ts';
import type { Store } from '../store/store.ts';
import { createSecret, hashSecret } from './api-key-secret.ts';
import { insertKey, type IssuedKey } from './issue-key.ts';
import type { KeyTarget } from './key-invalidation.ts';
import { canonicalMailbox, claimTrialMailbox } from './mailbox.ts';
import type { Mailer } from './mailer.ts';
import { hashPassword } from './passwords.ts';

const EMAIL_TOKEN_TTL_MS = 2 * DAY_MS;

export interface RegistrationOptions {
  store: Store;
  config: Config;
  clock: Clock;
  mailer: Mailer;
  logger: Logger;
  invalidate: (target: KeyTarget) => Promise<void>;
}

/** Sign-up and e-mail verification: how an account comes to be. */
export class Registration {
  readonly #o: RegistrationOptions;

  constructor(options: RegistrationOptions) {
    this.#o = options;
  }

  /** Creates an account on the Free Trial with its trial credit, first key and a verification token. */
  async register(email: string, password: string): Promise<{ account: AccountRecord; apiKey: IssuedKey }> {
    const { store, config, clock, mailer, logger } = this.#o;
    const now = clock();
    const normalized = email.trim().toLowerCase();
    const passwordHash = await hashPassword(password);
    const account = newAccountRecord(newId('acct'), normalized, passwordHash, now);
    const token = createSecret('ev-');
    const issued = await store
      .transaction(async (tx) => {
        if (await tx.accounts.byEmail(normalized))
          throw new GatewayError('conflict', 'an account with this e-mail already exists');
        await tx.accounts.insert(account);
        if (!(await claimTrialMailbox(tx.db, canonicalMailbox(normalized), account.id, now)))
          throw new GatewayError(
            'conflict',
            'an account for this mailbox already exists (a +tag, or dots at Gmail, do not make another mailbox)',
          );
        await grantCredit(tx.ledger, {
          accountId: account.id,
          kind: 'trial',
          amountMicros: config.trialCreditMicros,
          expiresAt: now + config.trialDays * DAY_MS,
          source: 'registration',
          now,
        });
        await tx.accounts.insertEmailToken(token.hash, account.id, now + EMAIL_TOKEN_TTL_MS);
        // The first key is its owner's, like every key: removing the owner member later stops it too.
        return insertKey(
          tx,
          { accountId: account.id, name: 'default', allowedIps: null, memberId: `mem_${account.id}` },
          now,
        );
      })
      .catch((error: unknown) => {
        // Two registrations racing past the check: the unique index decides, and the loser hears 409.
        if (error instanceof GatewayError) throw error;
        if (/unique|duplicate/i.test(String((error as Error).message))) {
          throw new GatewayError('conflict', 'an account with this e-mail already exists', { cause: error });
        }
        throw error;
      });
    const link = `POST ${config.publicUrl ?? ''}/api/auth/verify-email with {"token":"${token.secret}"}`;
    mailer
      .send({
        to: normalized,
        subject: 'Verify your Tollgate e-mail address',
        text: `Your verification token: ${token.secret}\n${link}`,
      })
      .catch((error: unknown) =>
        logger.warn({ err: error, accountId: account.id }, 'verification e-mail failed'),
      );
    return { account, apiKey: issued };
  }

  /** Marks the token's account verified; an unknown, used or expired token is a 400. */
  async verifyEmail(token: string): Promise<AccountRecord> {
    const { store, clock } = this.#o;
    const result = await store.accounts.consumeEmailToken(hashSecret(token), clock());
    if (typeof result === 'string') {
      const why = { unknown: 'is not valid', used: 'was already used', expired: 'has expired' }[result];
      throw new GatewayError('invalid_request', `verification token ${why}`);
    }
    await store.accounts.markVerified(result.accountId);
    // Cached keys carry the account: a verified address must open the trial credit at once.
    await this.#o.invalidate({ accountId: result.accountId });
    const account = await store.accounts.byId(result.accountId);
    if (!account) throw new GatewayError('invalid_request', 'verification token is not valid');
    return account;
  }
}
