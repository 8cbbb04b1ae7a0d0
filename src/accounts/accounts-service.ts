import type { Logger } from 'pino';
import type { HoldBook } from '../billing/hold-book.ts';
import type { Config } from '../core/config.ts';
import type { Limiter } from '../core/rate-limits.ts';
import type { Bus } from '../shared/bus.ts';
import type { Clock } from '../core/ids.ts';
import type { Store } from '../store/store.ts';
import { AccountControls } from './account-controls.ts';
import type { KeyCache } from './key-cache.ts';
import { invalidateKeys, type KeyTarget } from './key-invalidation.ts';
import { KeyAuthentication } from './key-authentication.ts';
import { KeysService } from './keys-service.ts';
import type { Mailer } from './mailer.ts';
import { Organizations } from './organizations.ts';
import { Registration } from './registration.ts';

export { ipAllowed, isCidr } from './cidr.ts';
export type { IssuedKey } from './issue-key.ts';
export type { Principal } from './key-authentication.ts';
export type { KeyChange } from './keys-service.ts';

export interface AccountsOptions {
  store: Store;
  config: Config;
  clock: Clock;
  mailer: Mailer;
  cache: KeyCache;
  bus: Bus;
  logger: Logger;
  /** Counts key creations per account and failed key guesses per address. */
  limiter: Limiter;
  /** Holds of requests in flight, which summaries and key status count. */
  holds: HoldBook;
}

/**
 * The account parts together, each changing for its own reasons: sign-up and verification (registration),
 * who a secret is (authentication), keys, and the account as a whole (controls), and
 * the organization an account is (members, roles, invitations). The methods below are the
 * parts' own, bound here so callers keep one handle.
 */
export class AccountsService {
  readonly registration: Registration;
  readonly authentication: KeyAuthentication;
  readonly keys: KeysService;
  readonly controls: AccountControls;
  readonly organizations: Organizations;

  constructor(options: AccountsOptions) {
    const { store, config, clock, mailer, cache, bus, logger, limiter, holds } = options;
    const invalidate = (target: KeyTarget): Promise<void> => invalidateKeys({ cache, bus, logger }, target);
    bus.subscribe((message) => cache.invalidate(message));
    this.registration = new Registration({ store, config, clock, mailer, logger, invalidate });
    this.authentication = new KeyAuthentication({ store, config, clock, cache, limiter });
    this.keys = new KeysService({ store, config, clock, limiter, holds, invalidate });
    this.controls = new AccountControls({ store, config, clock, holds, invalidate });
    this.organizations = new Organizations({
      ...{ store, config, clock, mailer, logger, invalidate },
      registration: this.registration,
    });
    this.invalidate = invalidate;
  }

  /** Drops cached keys here and, through the bus, on every other instance. */
  readonly invalidate: (target: KeyTarget) => Promise<void>;

  ensureAdminKey: KeyAuthentication['ensureAdminKey'] = (...a) => this.authentication.ensureAdminKey(...a);
  authenticate: KeyAuthentication['authenticate'] = (...a) => this.authentication.authenticate(...a);
  authenticateNow: KeyAuthentication['authenticateNow'] = (...a) => this.authentication.authenticateNow(...a);
  authenticateStored: KeyAuthentication['authenticateStored'] = (...a) =>
    this.authentication.authenticateStored(...a);

  register: Registration['register'] = (...a) => this.registration.register(...a);
  verifyEmail: Registration['verifyEmail'] = (...a) => this.registration.verifyEmail(...a);

  listKeys: KeysService['listKeys'] = (...a) => this.keys.listKeys(...a);
  keyOverview: KeysService['keyOverview'] = (...a) => this.keys.keyOverview(...a);
  keyStatus: KeysService['keyStatus'] = (...a) => this.keys.keyStatus(...a);
  createKey: KeysService['createKey'] = (...a) => this.keys.createKey(...a);
  updateKey: KeysService['updateKey'] = (...a) => this.keys.updateKey(...a);
  revokeKey: KeysService['revokeKey'] = (...a) => this.keys.revokeKey(...a);
  rotateKey: KeysService['rotateKey'] = (...a) => this.keys.rotateKey(...a);

  listAccounts: AccountControls['listAccounts'] = (...a) => this.controls.listAccounts(...a);
  summary: AccountControls['summary'] = (...a) => this.controls.summary(...a);
  grantCredit: AccountControls['grantCredit'] = (...a) => this.controls.grantCredit(...a);
  account: AccountControls['account'] = (...a) => this.controls.account(...a);
  setStatus: AccountControls['setStatus'] = (...a) => this.controls.setStatus(...a);
  setPlan: AccountControls['setPlan'] = (...a) => this.controls.setPlan(...a);
  setLimits: AccountControls['setLimits'] = (...a) => this.controls.setLimits(...a);
}
