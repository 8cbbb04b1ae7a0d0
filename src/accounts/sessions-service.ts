import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../core/config.ts';
import type { Job } from '../jobs/scheduler.ts';
import type { Limiter } from '../core/rate-limits.ts';
import { GatewayError } from '../core/gateway-error.ts';
import { type Clock, newId } from '../core/ids.ts';
import { addressGroup } from '../shared/address-group.ts';
import type { AccountRecord } from '../core/records.ts';
import type { SessionRecord } from '../store/sessions-repo.ts';
import type { Store } from '../store/store.ts';
import { createSecret, hashSecret } from './api-key-secret.ts';
import type { Mailer } from './mailer.ts';
import { hashPassword, verifyPassword } from './passwords.ts';
import { DAY_MS, HOUR_MS, MINUTE_MS } from '../core/time.ts';

/** How long sessions live and how hard sign-in is throttled (see docs/decisions.md, "Dashboard sign-in"). */
export interface SessionPolicy {
  /** A session unused this long ends. */
  idleMs: number;
  /** A session ends this long after sign-in, however busy. */
  absoluteMs: number;
  /** Sign-in (and reset-request) attempts per client address (an IPv6 /64) per minute. */
  attemptsPerIpPerMinute: number;
  /** Sign-in (and reset-request) attempts per e-mail address from one client address per minute. */
  attemptsPerEmailPerMinute: number;
  /**
   * Attempts per e-mail address from all addresses together per minute: far above the per-address share, so
   * that locking the owner out takes a crowd of addresses, yet guessing from a crowd stays bounded.
   */
  attemptsPerEmailAnywherePerMinute: number;
  /** A password-reset link's lifetime. */
  resetTokenMs: number;
}

export const DEFAULT_SESSION_POLICY: SessionPolicy = {
  idleMs: 12 * HOUR_MS,
  absoluteMs: 7 * DAY_MS,
  attemptsPerIpPerMinute: 20,
  attemptsPerEmailPerMinute: 5,
  attemptsPerEmailAnywherePerMinute: 50,
  resetTokenMs: HOUR_MS,
};

/** last_seen_at is written at most this often, so a busy dashboard costs no write per request. */
const TOUCH_EVERY_MS = MINUTE_MS;
const EMAIL_TOKEN_TTL_MS = 2 * DAY_MS;
const SESSION_PREFIX = 'tgs-';

export interface SignedIn {
  /** The cookie's value: shown to the browser once, stored only as a hash. */
  secret: string;
  session: SessionRecord;
  account: AccountRecord;
}

export interface SessionsOptions {
  store: Store;
  config: Config;
  clock: Clock;
  mailer: Mailer;
  limiter: Limiter;
  logger: Logger;
  policy?: Partial<SessionPolicy>;
}

/** Dashboard sign-in: sessions, sign-in throttling, password reset and change, verification resend. */
export class SessionsService {
  readonly #o: SessionsOptions;
  readonly policy: SessionPolicy;
  #attempts = 0;
  /** A hash no password matches, verified against when the e-mail is unknown so both cases take as long. */
  #decoy: Promise<string> | undefined;

  constructor(options: SessionsOptions) {
    this.#o = options;
    this.policy = { ...DEFAULT_SESSION_POLICY, ...options.policy };
  }

  /**
   * Signs in with e-mail and password. A wrong password and an unknown e-mail get the same 401 after the
   * same work; attempts are throttled per address and per e-mail (429) before any password is checked.
   */
  async login(email: string, password: string, ip: string): Promise<SignedIn> {
    const { store, clock } = this.#o;
    const normalized = email.trim().toLowerCase();
    await this.#throttle(ip, normalized, 'sign-in');
    const account = await store.accounts.byEmail(normalized);
    this.#decoy ??= hashPassword(randomBytes(16).toString('hex'));
    const matches = await verifyPassword(password, account?.passwordHash ?? (await this.#decoy));
    if (!account || !matches) throw new GatewayError('unauthorized', 'the e-mail or the password is wrong');
    if (account.status === 'suspended') throw new GatewayError('forbidden', 'this account is suspended');
    const now = clock();
    const secret = `${SESSION_PREFIX}${randomBytes(32).toString('base64url')}`;
    const session: SessionRecord = {
      id: newId('sess'),
      tokenHash: hashSecret(secret),
      accountId: account.id,
      csrfToken: randomBytes(24).toString('base64url'),
      createdAt: now,
      lastSeenAt: now,
      expiresAt: now + this.policy.absoluteMs,
    };
    await store.sessions.insert(session);
    return { secret, session, account };
  }

  /** The live session a cookie's secret names, with its account; undefined when unknown or expired. */
  async authenticate(
    secret: string,
  ): Promise<{ session: SessionRecord; account: AccountRecord } | undefined> {
    if (!secret.startsWith(SESSION_PREFIX) || secret.length > 200) return undefined;
    const { store, clock } = this.#o;
    const now = clock();
    const session = await store.sessions.live(hashSecret(secret), now, now - this.policy.idleMs);
    if (!session) return undefined;
    const account = await store.accounts.byId(session.accountId);
    if (!account) return undefined;
    if (now - session.lastSeenAt >= TOUCH_EVERY_MS) await store.sessions.touch(session.id, now);
    return { session, account };
  }

  /** True when the presented token is the session's CSRF token (constant-time). */
  csrfMatches(session: SessionRecord, presented: string | undefined): boolean {
    if (!presented) return false;
    const a = Buffer.from(presented);
    const b = Buffer.from(session.csrfToken);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  async logout(session: SessionRecord): Promise<void> {
    await this.#o.store.sessions.delete(session.id);
  }

  /** Ends every session of the account, this one included; resolves to how many ended. */
  async logoutEverywhere(accountId: string): Promise<number> {
    return this.#o.store.sessions.deleteForAccount(accountId);
  }

  /** Changes the password after checking the current one; every other session of the account ends. */
  async changePassword(session: SessionRecord, current: string, next: string): Promise<void> {
    const { store, clock } = this.#o;
    const account = await store.accounts.byId(session.accountId);
    if (!account || !(await verifyPassword(current, account.passwordHash)))
      throw new GatewayError('invalid_request', 'the current password is wrong');
    await store.sessions.setPasswordHash(account.id, await hashPassword(next));
    await store.sessions.deleteForAccount(account.id, session.id);
    await store.sessions.voidResetTokens(account.id, clock());
  }

  /**
   * Mails a single-use reset link (valid one hour) when the e-mail belongs to an account; says nothing
   * either way. Throttled like sign-in.
   */
  async requestPasswordReset(email: string, ip: string, baseUrl: string): Promise<void> {
    const { store, clock, mailer, logger } = this.#o;
    const normalized = email.trim().toLowerCase();
    await this.#throttle(ip, normalized, 'password-reset');
    const account = await store.accounts.byEmail(normalized);
    if (!account) return;
    const token = createSecret('pr-');
    await store.sessions.insertResetToken(token.hash, account.id, clock() + this.policy.resetTokenMs);
    mailer
      .send({
        to: account.email,
        subject: 'Reset your Tollgate password',
        text:
          `Someone (we hope you) asked to reset the password of this Tollgate account.\n` +
          `Open this link within one hour to choose a new one (it works once):\n` +
          `${baseUrl}/reset-password?token=${token.secret}\n` +
          `If it was not you, ignore this mail; your password stays as it is.`,
      })
      .catch((error: unknown) => logger.warn({ err: error, accountId: account.id }, 'reset e-mail failed'));
  }

  /** Sets a new password with a reset token; the token is spent and every session of the account ends. */
  async confirmPasswordReset(token: string, password: string): Promise<void> {
    const { store, clock } = this.#o;
    const result = await store.sessions.consumeResetToken(hashSecret(token), clock());
    if (typeof result === 'string') {
      const why = { unknown: 'is not valid', used: 'was already used', expired: 'has expired' }[result];
      throw new GatewayError('invalid_request', `this password-reset link ${why}`);
    }
    await store.sessions.setPasswordHash(result.accountId, await hashPassword(password));
    await store.sessions.deleteForAccount(result.accountId);
    await store.sessions.voidResetTokens(result.accountId, clock());
    // The link arrived by mail, which proves the address as a verification link would.
    await store.accounts.markVerified(result.accountId);
  }

  /** Mails a new verification link to an unverified account. */
  async resendVerification(account: AccountRecord, ip: string, baseUrl: string): Promise<void> {
    const { store, clock, mailer, logger } = this.#o;
    const fresh = await store.accounts.byId(account.id);
    if (fresh?.emailVerified) throw new GatewayError('conflict', 'this e-mail address is already verified');
    await this.#throttle(ip, account.email, 'verification');
    const token = createSecret('ev-');
    await store.accounts.insertEmailToken(token.hash, account.id, clock() + EMAIL_TOKEN_TTL_MS);
    mailer
      .send({
        to: account.email,
        subject: 'Verify your Tollgate e-mail address',
        text: `Open this link to verify your e-mail address:\n${baseUrl}/verify-email?token=${token.secret}\n`,
      })
      .catch((error: unknown) =>
        logger.warn({ err: error, accountId: account.id }, 'verification e-mail failed'),
      );
  }

  /** The hourly job that deletes sessions past their idle or absolute expiry (they no longer work anyway). */
  sweepJob(): Job {
    const { store, clock, logger } = this.#o;
    return {
      name: 'session-sweep',
      everyMs: HOUR_MS,
      leaseMs: 10 * MINUTE_MS,
      run: async () => {
        const now = clock();
        const deleted = await store.sessions.deleteExpired(now, now - this.policy.idleMs);
        if (deleted > 0) logger.info({ deleted }, 'expired dashboard sessions deleted');
      },
    };
  }

  /**
   * Counts an attempt against the address, the e-mail from that address and the e-mail from anywhere; 429
   * with Retry-After when one is over. Wrong passwords sent from elsewhere use up their own addresses' shares,
   * not the owner's.
   */
  async #throttle(ip: string, email: string, what: string): Promise<void> {
    const { limiter, clock } = this.#o;
    const now = clock();
    const group = addressGroup(ip);
    const mailbox = hashSecret(email);
    const checks = [
      { subject: `${what}:ip:${group}`, perMinute: this.policy.attemptsPerIpPerMinute },
      { subject: `${what}:email-ip:${mailbox}:${group}`, perMinute: this.policy.attemptsPerEmailPerMinute },
      { subject: `${what}:email:${mailbox}`, perMinute: this.policy.attemptsPerEmailAnywherePerMinute },
    ];
    for (const check of checks) {
      const admission = await limiter.admit({
        subject: check.subject,
        requestId: `auth-${this.#attempts++}`,
        limits: { requestsPerMinute: check.perMinute, tokensPerMinute: null, dailyTokens: null },
        tokens: 0,
        now,
      });
      if (!admission.allowed) {
        throw new GatewayError('rate_limit_exceeded', `too many ${what} attempts; retry later`, {
          ...(admission.retryAfterMs !== undefined ? { retryAfterMs: admission.retryAfterMs } : {}),
        });
      }
    }
  }
}
