import type { Db } from './db.ts';
import type { AccountRow } from './accounts-repo.ts';
import { toAccount } from './accounts-repo.ts';
import type {
  AccountRecord,
  InvitationRecord,
  LimitPeriod,
  MemberRecord,
  MemberRole,
} from '../core/records.ts';

interface MemberRow {
  id: string;
  organization_id: string;
  person_id: string;
  role: MemberRole;
  spend_limit_micros: number | string | null;
  limit_period: LimitPeriod | null;
  allowed_models: string | null;
  created_at: number | string;
}

const toMember = (row: MemberRow): MemberRecord => ({
  id: row.id,
  organizationId: row.organization_id,
  personId: row.person_id,
  role: row.role,
  spendLimitMicros: row.spend_limit_micros === null ? null : Number(row.spend_limit_micros),
  limitPeriod: row.limit_period,
  allowedModels: row.allowed_models === null ? null : (JSON.parse(row.allowed_models) as string[]),
  createdAt: Number(row.created_at),
});

interface InvitationRow {
  id: string;
  organization_id: string;
  email: string;
  role: MemberRole;
  invited_by: string;
  created_at: number | string;
  expires_at: number | string;
  accepted_at: number | string | null;
  revoked_at: number | string | null;
}

const toInvitation = (row: InvitationRow): InvitationRecord => ({
  id: row.id,
  organizationId: row.organization_id,
  email: row.email,
  role: row.role,
  invitedBy: row.invited_by,
  createdAt: Number(row.created_at),
  expiresAt: Number(row.expires_at),
  acceptedAt: row.accepted_at === null ? null : Number(row.accepted_at),
  revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
});

/** A member with the sign-in's e-mail, as the members page lists it. */
export interface MemberWithEmail extends MemberRecord {
  email: string;
}

/** Organizations' members and invitations (an organization is an account; see migration 015). */
export class MembersRepo {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  async insert(member: MemberRecord): Promise<void> {
    await this.#db.run(
      `INSERT INTO members (id, organization_id, person_id, role, spend_limit_micros, limit_period, allowed_models,
         created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        member.id,
        member.organizationId,
        member.personId,
        member.role,
        member.spendLimitMicros,
        member.limitPeriod,
        member.allowedModels && JSON.stringify(member.allowedModels),
        member.createdAt,
      ],
    );
  }

  async byId(organizationId: string, memberId: string): Promise<MemberRecord | undefined> {
    const row = await this.#db.get<MemberRow>(
      'SELECT * FROM members WHERE organization_id = $1 AND id = $2',
      [organizationId, memberId],
    );
    return row && toMember(row);
  }

  async of(organizationId: string, personId: string): Promise<MemberRecord | undefined> {
    const row = await this.#db.get<MemberRow>(
      'SELECT * FROM members WHERE organization_id = $1 AND person_id = $2',
      [organizationId, personId],
    );
    return row && toMember(row);
  }

  /** The organization's members with their sign-ins' e-mails, oldest first. */
  async list(organizationId: string): Promise<MemberWithEmail[]> {
    const rows = await this.#db.all<MemberRow & { email: string }>(
      `SELECT m.*, a.email AS email FROM members m JOIN accounts a ON a.id = m.person_id
       WHERE m.organization_id = $1 ORDER BY m.created_at, m.id`,
      [organizationId],
    );
    return rows.map((row) => ({ ...toMember(row), email: row.email }));
  }

  /** The organizations a person belongs to, with the person's membership in each. */
  async organizationsOf(personId: string): Promise<{ organization: AccountRecord; member: MemberRecord }[]> {
    const rows = await this.#db.all<MemberRow & { [K in keyof AccountRow as `o_${K}`]: AccountRow[K] }>(
      `SELECT m.*, o.id AS o_id, o.email AS o_email, o.password_hash AS o_password_hash,
              o.email_verified AS o_email_verified, o.status AS o_status, o.plan AS o_plan,
              o.plan_expires_at AS o_plan_expires_at, o.rpm_limit AS o_rpm_limit, o.tpm_limit AS o_tpm_limit,
              o.daily_token_limit AS o_daily_token_limit, o.credit_limit_micros AS o_credit_limit_micros,
              o.debt_micros AS o_debt_micros, o.held_micros AS o_held_micros, o.created_at AS o_created_at,
              o.last_active_at AS o_last_active_at, o.role AS o_role, o.suspended_reason AS o_suspended_reason,
              o.org_name AS o_org_name
       FROM members m JOIN accounts o ON o.id = m.organization_id
       WHERE m.person_id = $1 ORDER BY m.created_at, m.id`,
      [personId],
    );
    return rows.map((row) => ({
      member: toMember(row),
      organization: toAccount({
        id: row.o_id,
        email: row.o_email,
        password_hash: row.o_password_hash,
        email_verified: row.o_email_verified,
        status: row.o_status,
        plan: row.o_plan,
        plan_expires_at: row.o_plan_expires_at,
        rpm_limit: row.o_rpm_limit,
        tpm_limit: row.o_tpm_limit,
        daily_token_limit: row.o_daily_token_limit,
        credit_limit_micros: row.o_credit_limit_micros,
        debt_micros: row.o_debt_micros,
        held_micros: row.o_held_micros,
        created_at: row.o_created_at,
        last_active_at: row.o_last_active_at,
        role: row.o_role,
        suspended_reason: row.o_suspended_reason,
        org_name: row.o_org_name ?? null,
      }),
    }));
  }

  /** How many owners the organization has (inside a transaction that locked the organization's row). */
  async ownerCount(organizationId: string): Promise<number> {
    const row = await this.#db.get<{ n: number | string }>(
      `SELECT COUNT(*) AS n FROM members WHERE organization_id = $1 AND role = 'owner'`,
      [organizationId],
    );
    return Number(row?.n ?? 0);
  }

  /** Replaces a member's role and controls. */
  async update(member: MemberRecord): Promise<void> {
    await this.#db.run(
      `UPDATE members SET role = $3, spend_limit_micros = $4, limit_period = $5, allowed_models = $6
       WHERE organization_id = $1 AND id = $2`,
      [
        member.organizationId,
        member.id,
        member.role,
        member.spendLimitMicros,
        member.limitPeriod,
        member.allowedModels && JSON.stringify(member.allowedModels),
      ],
    );
  }

  async remove(organizationId: string, memberId: string): Promise<boolean> {
    return (
      (await this.#db.run('DELETE FROM members WHERE organization_id = $1 AND id = $2', [
        organizationId,
        memberId,
      ])) === 1
    );
  }

  /** The member's active keys' ids (to revoke when the member leaves). */
  async activeKeyIds(organizationId: string, memberId: string): Promise<string[]> {
    const rows = await this.#db.all<{ id: string }>(
      `SELECT id FROM api_keys WHERE account_id = $1 AND member_id = $2 AND status = 'active'`,
      [organizationId, memberId],
    );
    return rows.map((row) => row.id);
  }

  async setName(organizationId: string, name: string | null): Promise<boolean> {
    return (
      (await this.#db.run('UPDATE accounts SET org_name = $2 WHERE id = $1', [organizationId, name])) === 1
    );
  }

  async insertInvitation(invitation: InvitationRecord, tokenHash: string): Promise<void> {
    await this.#db.run(
      `INSERT INTO invitations (id, token_hash, organization_id, email, role, invited_by, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        invitation.id,
        tokenHash,
        invitation.organizationId,
        invitation.email,
        invitation.role,
        invitation.invitedBy,
        invitation.createdAt,
        invitation.expiresAt,
      ],
    );
  }

  async invitationsOf(organizationId: string): Promise<InvitationRecord[]> {
    const rows = await this.#db.all<InvitationRow>(
      'SELECT * FROM invitations WHERE organization_id = $1 ORDER BY created_at, id',
      [organizationId],
    );
    return rows.map(toInvitation);
  }

  async revokeInvitation(organizationId: string, id: string, now: number): Promise<boolean> {
    return (
      (await this.#db.run(
        `UPDATE invitations SET revoked_at = $3
         WHERE organization_id = $1 AND id = $2 AND accepted_at IS NULL AND revoked_at IS NULL`,
        [organizationId, id, now],
      )) === 1
    );
  }

  /**
   * Uses the invitation with this token's hash once: the invitation, or why not. Two acceptances racing: the
   * conditional update lets one through.
   */
  async consumeInvitation(
    tokenHash: string,
    now: number,
  ): Promise<InvitationRecord | 'unknown' | 'used' | 'expired' | 'revoked'> {
    const row = await this.#db.get<InvitationRow>('SELECT * FROM invitations WHERE token_hash = $1', [
      tokenHash,
    ]);
    if (!row) return 'unknown';
    const invitation = toInvitation(row);
    if (invitation.revokedAt !== null) return 'revoked';
    if (invitation.acceptedAt !== null) return 'used';
    if (invitation.expiresAt <= now) return 'expired';
    const changed = await this.#db.run(
      'UPDATE invitations SET accepted_at = $2 WHERE id = $1 AND accepted_at IS NULL AND revoked_at IS NULL',
      [invitation.id, now],
    );
    return changed === 1 ? { ...invitation, acceptedAt: now } : 'used';
  }
}
