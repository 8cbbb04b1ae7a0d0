import type { Logger } from 'pino';
import type { Config } from '../core/config.ts';
import { GatewayError } from '../core/gateway-error.ts';
import { type Clock, newId } from '../core/ids.ts';
import { DAY_MS } from '../core/time.ts';
import type { MemberWithEmail } from '../store/members-repo.ts';
import {
  type AccountRecord,
  type InvitationRecord,
  type LimitPeriod,
  MEMBER_ROLES,
  type MemberRecord,
  type MemberRole,
  newAccountRecord,
} from '../core/records.ts';
import type { Store } from '../store/store.ts';
import { createSecret, hashSecret } from './api-key-secret.ts';
import type { KeyTarget } from './key-invalidation.ts';
import type { Mailer } from './mailer.ts';
import type { Registration } from './registration.ts';
import { mayDo, refuseUnlessAllowed } from './roles.ts';

const INVITATION_TTL_MS = 7 * DAY_MS;

/** Who acts: the person signed in (or the key's member) and their membership in the organization. */
export interface Actor {
  person: { id: string; email: string };
  member: MemberRecord;
  ip: string;
}

/** A change to a member: what is given replaces what it had (null removes a rule). */
export interface MemberChange {
  role?: MemberRole;
  spendLimitMicros?: number | null;
  limitPeriod?: LimitPeriod | null;
  allowedModels?: string[] | null;
}

export interface OrganizationsOptions {
  store: Store;
  config: Config;
  clock: Clock;
  mailer: Mailer;
  logger: Logger;
  registration: Registration;
  /** Drops cached keys here and on every instance. */
  invalidate: (target: KeyTarget) => Promise<void>;
}

export const isMemberRole = (value: unknown): value is MemberRole =>
  typeof value === 'string' && (MEMBER_ROLES as readonly string[]).includes(value);

/**
 * Organizations: an account is an organization, and its members are people (sign-ins) in roles. Member and
 * role changes keep an owner, drop the organization's cached keys everywhere, and go to the audit log.
 */
export class Organizations {
  readonly #o: OrganizationsOptions;

  constructor(options: OrganizationsOptions) {
    this.#o = options;
  }

  /** The organizations a person belongs to, with the person's role in each. */
  async list(personId: string): Promise<{ organization: AccountRecord; member: MemberRecord }[]> {
    return this.#o.store.members.organizationsOf(personId);
  }

  /** The person's membership in the organization, or undefined (the organization is then not theirs to see). */
  async membership(organizationId: string, personId: string): Promise<MemberRecord | undefined> {
    return this.#o.store.members.of(organizationId, personId);
  }

  /** A new organization with the person as its owner: no trial credit (that comes with a sign-up), no keys. */
  async create(
    person: AccountRecord,
    name: string,
  ): Promise<{ organization: AccountRecord; member: MemberRecord }> {
    const { store, clock } = this.#o;
    const now = clock();
    const id = newId('acct');
    // An organization signs in as nobody: its address is unroutable and its password hash matches nothing.
    const organization: AccountRecord = {
      ...newAccountRecord(id, `${id}@organizations.invalid`, '!', now),
      emailVerified: person.emailVerified,
      orgName: name,
    };
    await store.transaction(async (tx) => tx.accounts.insert(organization, person.id));
    const member = await store.members.of(id, person.id);
    return { organization, member: member! };
  }

  async rename(actor: Actor, organizationId: string, name: string): Promise<void> {
    await this.#o.store.members.setName(organizationId, name);
    await this.#audit(actor, organizationId, 'organization.rename', null, { name });
  }

  async members(organizationId: string): Promise<MemberWithEmail[]> {
    return this.#o.store.members.list(organizationId);
  }

  async invitations(organizationId: string): Promise<InvitationRecord[]> {
    return this.#o.store.members.invitationsOf(organizationId);
  }

  /** Changes a member's role or controls; only an owner makes or unmakes owners, and one owner always stays. */
  async updateMember(
    actor: Actor,
    organizationId: string,
    memberId: string,
    change: MemberChange,
  ): Promise<MemberRecord> {
    const { store } = this.#o;
    const updated = await store.transaction(async (tx) => {
      await tx.accounts.lockForUpdate(organizationId);
      const member = await tx.members.byId(organizationId, memberId);
      if (!member) throw new GatewayError('not_found', `no member ${memberId}`);
      const role = change.role ?? member.role;
      if (role !== member.role && (role === 'owner' || member.role === 'owner'))
        refuseUnlessAllowed(actor.member.role, 'ownership');
      if (member.role === 'owner' && role !== 'owner' && (await tx.members.ownerCount(organizationId)) <= 1)
        throw new GatewayError(
          'invalid_request',
          'an organization always keeps an owner; make another member owner first',
        );
      const spendLimitMicros =
        change.spendLimitMicros === undefined ? member.spendLimitMicros : change.spendLimitMicros;
      if (spendLimitMicros === null && change.limitPeriod != null)
        throw new GatewayError(
          'invalid_request',
          'body.limit_period: set limit_usd too (the member has no limit)',
        );
      const period = change.limitPeriod === undefined ? member.limitPeriod : change.limitPeriod;
      const next: MemberRecord = {
        ...member,
        role,
        spendLimitMicros,
        limitPeriod: spendLimitMicros === null ? null : (period ?? 'never'),
        allowedModels: change.allowedModels === undefined ? member.allowedModels : change.allowedModels,
      };
      await tx.members.update(next);
      return { before: member, after: next };
    });
    // The member's keys carry its role and controls: every instance reads them again on the next request.
    await this.#o.invalidate({ accountId: organizationId });
    await this.#audit(actor, organizationId, 'member.update', memberId, {
      ...(updated.before.role !== updated.after.role
        ? { role: [updated.before.role, updated.after.role] }
        : {}),
      spend_limit_micros: updated.after.spendLimitMicros,
      limit_period: updated.after.limitPeriod,
      allowed_models: updated.after.allowedModels,
    });
    return updated.after;
  }

  /**
   * Removes a member (a member may also leave on its own): its keys are revoked at once, here and on every
   * instance. The last owner cannot go.
   */
  async removeMember(actor: Actor, organizationId: string, memberId: string): Promise<MemberRecord> {
    const { store, clock } = this.#o;
    const self = actor.member.id === memberId;
    if (!self) refuseUnlessAllowed(actor.member.role, 'members');
    const { member, keyIds } = await store.transaction(async (tx) => {
      await tx.accounts.lockForUpdate(organizationId);
      const found = await tx.members.byId(organizationId, memberId);
      if (!found) throw new GatewayError('not_found', `no member ${memberId}`);
      if (found.role === 'owner' && !self) refuseUnlessAllowed(actor.member.role, 'ownership');
      if (found.role === 'owner' && (await tx.members.ownerCount(organizationId)) <= 1)
        throw new GatewayError(
          'invalid_request',
          'an organization always keeps an owner; make another member owner first',
        );
      const ids = await tx.members.activeKeyIds(organizationId, memberId);
      const now = clock();
      for (const id of ids) await tx.accounts.revokeKey(id, now);
      await tx.members.remove(organizationId, memberId);
      return { member: found, keyIds: ids };
    });
    for (const keyId of keyIds) await this.#o.invalidate({ keyId });
    await this.#o.invalidate({ accountId: organizationId });
    await this.#audit(actor, organizationId, self ? 'member.leave' : 'member.remove', memberId, {
      person_id: member.personId,
      role: member.role,
      revoked_keys: keyIds.length,
    });
    return member;
  }

  /** Invites an address in a role: a single-use token that expires in a week, in the answer and the e-mail. */
  async invite(
    actor: Actor,
    organizationId: string,
    email: string,
    role: MemberRole,
  ): Promise<{ invitation: InvitationRecord; token: string }> {
    const { store, clock, config, mailer, logger } = this.#o;
    if (role === 'owner') refuseUnlessAllowed(actor.member.role, 'ownership');
    const now = clock();
    const token = createSecret('inv-');
    const invitation: InvitationRecord = {
      id: newId('inv'),
      organizationId,
      email: email.trim().toLowerCase(),
      role,
      invitedBy: actor.person.id,
      createdAt: now,
      expiresAt: now + INVITATION_TTL_MS,
      acceptedAt: null,
      revokedAt: null,
    };
    await store.members.insertInvitation(invitation, token.hash);
    const link = `${config.publicUrl ?? ''}/dashboard/accept-invitation#token=${token.secret}`;
    mailer
      .send({
        to: invitation.email,
        subject: 'You are invited to a Tollgate organization',
        text: `${actor.person.email} invites you as ${role}.\nAccept: ${link}\nOr POST /api/invitations/accept with {"token":"${token.secret}"}\nThe invitation expires in 7 days.`,
      })
      .catch((error: unknown) => logger.warn({ err: error, organizationId }, 'invitation e-mail failed'));
    await this.#audit(actor, organizationId, 'invitation.create', null, { email: invitation.email, role });
    return { invitation, token: token.secret };
  }

  async revokeInvitation(actor: Actor, organizationId: string, invitationId: string): Promise<void> {
    if (!(await this.#o.store.members.revokeInvitation(organizationId, invitationId, this.#o.clock())))
      throw new GatewayError('not_found', `no open invitation ${invitationId}`);
    await this.#audit(actor, organizationId, 'invitation.revoke', null, { invitation_id: invitationId });
  }

  /**
   * Accepts an invitation: into the signed-in person's sign-in, or into a new sign-in made with `email` and
   * `password` (a registration). 400 when the token is unknown, used, expired or revoked; 409 when the person
   * is a member already.
   */
  async accept(
    token: string,
    who: { person: AccountRecord } | { email: string; password: string },
    ip: string,
  ): Promise<{ organizationId: string; member: MemberRecord; person: AccountRecord }> {
    const { store, clock, registration } = this.#o;
    const now = clock();
    const person =
      'person' in who ? who.person : (await registration.register(who.email, who.password)).account;
    const member = await store.transaction(async (tx) => {
      const invitation = await tx.members.consumeInvitation(hashSecret(token), now);
      if (typeof invitation === 'string') {
        const why = {
          unknown: 'is not valid',
          used: 'was already used',
          expired: 'has expired',
          revoked: 'was revoked',
        }[invitation];
        throw new GatewayError('invalid_request', `invitation token ${why}`);
      }
      if (await tx.members.of(invitation.organizationId, person.id))
        throw new GatewayError('conflict', 'you are a member of this organization already');
      const fresh: MemberRecord = {
        id: newId('mem'),
        organizationId: invitation.organizationId,
        personId: person.id,
        role: invitation.role,
        spendLimitMicros: null,
        limitPeriod: null,
        allowedModels: null,
        createdAt: now,
      };
      await tx.members.insert(fresh);
      return fresh;
    });
    await this.#audit(
      { person: { id: person.id, email: person.email }, member, ip },
      member.organizationId,
      'member.join',
      member.id,
      { role: member.role, via: 'invitation' },
    );
    return { organizationId: member.organizationId, member, person };
  }

  /** Whether the actor may act on keys of other members too. */
  static seesAllKeys(role: MemberRole): boolean {
    return mayDo(role, 'keys.all');
  }

  async #audit(
    actor: Actor,
    organizationId: string,
    action: string,
    memberId: string | null,
    details: Record<string, unknown>,
  ): Promise<void> {
    const { store, clock, logger } = this.#o;
    await store.audit
      .append({
        id: newId('audit'),
        at: clock(),
        actor: actor.person.email,
        actorAccountId: actor.person.id,
        action,
        accountId: organizationId,
        details: { ...(memberId === null ? {} : { member_id: memberId }), ...details },
        ip: actor.ip,
      })
      .catch((error: unknown) =>
        logger.warn({ err: error, organizationId, action }, 'audit row not written'),
      );
  }
}
