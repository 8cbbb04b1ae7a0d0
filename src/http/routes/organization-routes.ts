import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { LIMIT_PERIODS } from '../../accounts/key-controls.ts';
import type { Actor } from '../../accounts/organizations.ts';
import type { MemberWithEmail } from '../../store/members-repo.ts';
import {
  type AccountRecord,
  type InvitationRecord,
  type LimitPeriod,
  MEMBER_ROLES,
  type MemberRecord,
  type MemberRole,
} from '../../core/records.ts';
import type { Services } from '../app-services.ts';
import { GatewayError } from '../../core/gateway-error.ts';
import { microsToUsd, usdToMicros } from '../../core/money.ts';
import { CSRF_HEADER, sessionCookie } from '../session-cookie.ts';
import { asUser, userOf } from './principal.ts';
import {
  type Invitation,
  type Member,
  type Organization,
  adminMembersSchema,
  invitationAcceptedSchema,
  invitationSchema,
  invitationsSchema,
  memberRoles,
  memberSchema,
  membersSchema,
  noContentSchema,
  organizationSchema,
  organizationsSchema,
} from '../schemas/api.ts';

// The roles the answers name are the roles there are.
const sameRoles: typeof MEMBER_ROLES = memberRoles;
void sameRoles;

const idParams = {
  type: 'object',
  properties: { id: { type: 'string', maxLength: 100 }, member_id: { type: 'string', maxLength: 100 } },
} as const;

const nameBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: { name: { type: 'string', minLength: 1, maxLength: 100 } },
} as const;

const memberBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    role: { type: 'string', enum: MEMBER_ROLES },
    limit_usd: { type: ['number', 'null'], minimum: 0, maximum: 1_000_000 },
    limit_period: { type: ['string', 'null'], enum: [...LIMIT_PERIODS, null] },
    allowed_models: { type: ['array', 'null'], maxItems: 100, items: { type: 'string', maxLength: 200 } },
  },
} as const;

const invitationBody = {
  type: 'object',
  additionalProperties: false,
  required: ['email', 'role'],
  properties: {
    email: { type: 'string', minLength: 3, maxLength: 254, pattern: '^[^@\\s]+@[^@\\s]+$' },
    role: { type: 'string', enum: MEMBER_ROLES },
  },
} as const;

const acceptBody = {
  type: 'object',
  additionalProperties: false,
  required: ['token'],
  properties: {
    token: { type: 'string', minLength: 1, maxLength: 200 },
    email: { type: 'string', minLength: 3, maxLength: 254, pattern: '^[^@\\s]+@[^@\\s]+$' },
    password: { type: 'string', minLength: 10, maxLength: 200 },
  },
} as const;

const iso = (ms: number): string => new Date(ms).toISOString();

function presentOrganization(organization: AccountRecord, member: MemberRecord): Organization {
  return {
    object: 'organization' as const,
    id: organization.id,
    name: organization.orgName ?? organization.email,
    plan: organization.plan,
    role: member.role,
    member_id: member.id,
    created_at: iso(organization.createdAt),
  };
}

function presentMember(member: MemberWithEmail): Member {
  return {
    object: 'organization.member' as const,
    id: member.id,
    email: member.email,
    role: member.role,
    limit_usd: member.spendLimitMicros === null ? null : microsToUsd(member.spendLimitMicros),
    limit_period: member.limitPeriod,
    allowed_models: member.allowedModels,
    created_at: iso(member.createdAt),
  };
}

function presentInvitation(invitation: InvitationRecord, now: number, token?: string): Invitation {
  const status: Invitation['status'] =
    invitation.revokedAt !== null
      ? 'revoked'
      : invitation.acceptedAt !== null
        ? 'accepted'
        : invitation.expiresAt <= now
          ? 'expired'
          : 'open';
  return {
    object: 'organization.invitation' as const,
    id: invitation.id,
    email: invitation.email,
    role: invitation.role,
    created_at: iso(invitation.createdAt),
    expires_at: iso(invitation.expiresAt),
    status,
    ...(token === undefined ? {} : { token }),
  };
}

/**
 * `/api/organizations` and `/api/invitations`: the organizations a person belongs to, their members, roles,
 * per-member controls and invitations. The auth hook has chosen the organization (the path's `:id`) and
 * checked the role's right to the route (accounts/roles.ts) before a handler runs.
 */
export const organizationRoutes: FastifyPluginAsync<
  Pick<Services, 'accounts' | 'config' | 'clock' | 'sessions' | 'store'>
> = async (app, services) => {
  const orgs = services.accounts.organizations;
  const config = { auth: 'user' } as const;

  /** Who acts: the signed-in person, or the person of the key's member (the owner for a key with none). */
  async function actorOf(request: FastifyRequest): Promise<Actor> {
    const session = request.sessionUser;
    if (session?.member) {
      const person = session.person ?? session.account;
      return { person: { id: person.id, email: person.email }, member: session.member, ip: request.ip };
    }
    const { key, account } = asUser(request.principal);
    const member = key.member
      ? await services.store.members.byId(account.id, key.member.id)
      : await services.store.members.byId(account.id, `mem_${account.id}`);
    if (!member) throw new GatewayError('forbidden', 'this API key belongs to no member of the organization');
    const person =
      member.personId === account.id ? account : await services.accounts.account(member.personId);
    return { person: { id: person.id, email: person.email }, member, ip: request.ip };
  }

  app.get(
    '/organizations',
    { config, schema: { response: { 200: organizationsSchema } } },
    async (request) => {
      const actor = await actorOf(request);
      const memberships = await orgs.list(actor.person.id);
      return {
        object: 'list' as const,
        data: memberships.map(({ organization, member }) => presentOrganization(organization, member)),
      };
    },
  );

  app.post<{ Body: { name: string } }>(
    '/organizations',
    { config, schema: { body: nameBody, response: { 201: organizationSchema } } },
    async (request, reply) => {
      const actor = await actorOf(request);
      const person = await services.accounts.account(actor.person.id);
      const { organization, member } = await orgs.create(person, request.body.name);
      return reply.status(201).send(presentOrganization(organization, member));
    },
  );

  app.get<{ Params: { id: string } }>(
    '/organizations/:id',
    { config, schema: { params: idParams, response: { 200: organizationSchema } } },
    async (request) => presentOrganization(userOf(request).account, (await actorOf(request)).member),
  );

  app.patch<{ Params: { id: string }; Body: { name: string } }>(
    '/organizations/:id',
    { config, schema: { params: idParams, body: nameBody, response: { 200: organizationSchema } } },
    async (request) => {
      const actor = await actorOf(request);
      await orgs.rename(actor, request.params.id, request.body.name);
      return presentOrganization(await services.accounts.account(request.params.id), actor.member);
    },
  );

  app.get<{ Params: { id: string } }>(
    '/organizations/:id/members',
    { config, schema: { params: idParams, response: { 200: membersSchema } } },
    async (request) => ({
      object: 'list' as const,
      data: (await orgs.members(request.params.id)).map(presentMember),
    }),
  );

  app.patch<{
    Params: { id: string; member_id: string };
    Body: {
      role?: MemberRole;
      limit_usd?: number | null;
      limit_period?: LimitPeriod | null;
      allowed_models?: string[] | null;
    };
  }>(
    '/organizations/:id/members/:member_id',
    { config, schema: { params: idParams, body: memberBody, response: { 200: memberSchema } } },
    async (request) => {
      const body = request.body;
      const models = body.allowed_models;
      if (models) {
        if (models.length === 0)
          throw new GatewayError(
            'invalid_request',
            'body.allowed_models: give at least one model, or null for every model',
          );
        const unknown = models.find((id) => !services.config.models.has(id));
        if (unknown !== undefined)
          throw new GatewayError('invalid_request', `body.allowed_models: ${unknown} is not a model`);
      }
      const member = await orgs.updateMember(
        await actorOf(request),
        request.params.id,
        request.params.member_id,
        {
          ...(body.role === undefined ? {} : { role: body.role }),
          ...(body.limit_usd === undefined
            ? {}
            : { spendLimitMicros: body.limit_usd === null ? null : usdToMicros(body.limit_usd) }),
          ...(body.limit_period === undefined ? {} : { limitPeriod: body.limit_period }),
          ...(models === undefined ? {} : { allowedModels: models && [...new Set(models)] }),
        },
      );
      const email = (await services.accounts.account(member.personId)).email;
      return presentMember({ ...member, email });
    },
  );

  app.delete<{ Params: { id: string; member_id: string } }>(
    '/organizations/:id/members/:member_id',
    { config, schema: { params: idParams, response: { 200: memberSchema } } },
    async (request) => {
      const member = await orgs.removeMember(
        await actorOf(request),
        request.params.id,
        request.params.member_id,
      );
      const email = (await services.accounts.account(member.personId)).email;
      return presentMember({ ...member, email });
    },
  );

  app.get<{ Params: { id: string } }>(
    '/organizations/:id/invitations',
    { config, schema: { params: idParams, response: { 200: invitationsSchema } } },
    async (request) => {
      const now = services.clock();
      return {
        object: 'list' as const,
        data: (await orgs.invitations(request.params.id)).map((i) => presentInvitation(i, now)),
      };
    },
  );

  app.post<{ Params: { id: string }; Body: { email: string; role: MemberRole } }>(
    '/organizations/:id/invitations',
    { config, schema: { params: idParams, body: invitationBody, response: { 201: invitationSchema } } },
    async (request, reply) => {
      const { invitation, token } = await orgs.invite(
        await actorOf(request),
        request.params.id,
        request.body.email,
        request.body.role,
      );
      return reply.status(201).send(presentInvitation(invitation, services.clock(), token));
    },
  );

  app.delete<{ Params: { id: string; invitation_id: string } }>(
    '/organizations/:id/invitations/:invitation_id',
    {
      config,
      schema: {
        params: {
          type: 'object',
          properties: { ...idParams.properties, invitation_id: { type: 'string', maxLength: 100 } },
        },
        response: { 204: noContentSchema },
      },
    },
    async (request, reply) => {
      await orgs.revokeInvitation(await actorOf(request), request.params.id, request.params.invitation_id);
      return reply.status(204).send();
    },
  );

  // The operator console: an organization's members and roles, and its invitations.
  app.get<{ Params: { id: string } }>(
    '/admin/organizations/:id/members',
    {
      config: { auth: 'admin' },
      schema: {
        params: idParams,
        response: { 200: adminMembersSchema },
      },
    },
    async (request) => {
      await services.accounts.account(request.params.id);
      const now = services.clock();
      return {
        object: 'list' as const,
        data: (await orgs.members(request.params.id)).map(presentMember),
        invitations: (await orgs.invitations(request.params.id)).map((i) => presentInvitation(i, now)),
      };
    },
  );

  app.post<{ Body: { token: string; email?: string; password?: string } }>(
    '/invitations/accept',
    {
      schema: {
        body: acceptBody,
        response: { 200: invitationAcceptedSchema },
      },
    },
    async (request) => {
      const { token, email, password } = request.body;
      // A signed-in person accepts into its sign-in (with its CSRF token, as every signed-in change).
      const cookie = sessionCookie(request, services.config);
      const signedIn = cookie === undefined ? undefined : await services.sessions.authenticate(cookie);
      let who: { person: AccountRecord } | { email: string; password: string };
      if (signedIn) {
        const csrf = request.headers[CSRF_HEADER];
        if (!services.sessions.csrfMatches(signedIn.session, typeof csrf === 'string' ? csrf : undefined))
          throw new GatewayError(
            'forbidden',
            `a signed-in request that changes something needs the ${CSRF_HEADER} header`,
          );
        who = { person: signedIn.account };
      } else if (email !== undefined && password !== undefined) {
        who = { email, password };
      } else {
        throw new GatewayError('unauthorized', 'sign in, or give email and password for a new sign-in');
      }
      const accepted = await orgs.accept(token, who, request.ip);
      return {
        object: 'organization.invitation.accepted' as const,
        organization_id: accepted.organizationId,
        member: presentMember({ ...accepted.member, email: accepted.person.email }),
      };
    },
  );
};
