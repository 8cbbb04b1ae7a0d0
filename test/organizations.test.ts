import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { costMicros } from '../src/billing/pricing.ts';
import { countPromptTokens } from '../src/core/count-tokens.ts';
import { actionOf, mayDo, ROUTE_ACTIONS } from '../src/accounts/roles.ts';
import { MEMBER_ROLES, type MemberRole } from '../src/core/records.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';

const PASSWORD = 'correct horse battery';

interface Person {
  email: string;
  cookie: string;
  csrf: string;
  memberId: string;
}

for (const backend of BACKENDS) {
  const skip = await backend.unavailable();
  describe(`organizations on ${backend.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let server: TestServer;
    let orgId: string;
    let ownerKey: string;
    const people = new Map<MemberRole, Person>();

    const signIn = async (email: string): Promise<{ cookie: string; csrf: string }> => {
      const response = await server.call('POST', '/api/auth/login', { body: { email, password: PASSWORD } });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      return {
        cookie: (response.headers.get('set-cookie') ?? '').split(';')[0] ?? '',
        csrf: response.body.csrf_token,
      };
    };
    /** A call as a signed-in person acting in the organization. */
    const as = (person: { cookie: string; csrf: string }, organization = orgId) => ({
      cookie: person.cookie,
      'x-csrf-token': person.csrf,
      'x-tollgate-organization': organization,
    });
    const invite = async (email: string, role: MemberRole) => {
      const invited = await server.call('POST', `/api/organizations/${orgId}/invitations`, {
        key: ownerKey,
        body: { email, role },
      });
      assert.equal(invited.status, 201, JSON.stringify(invited.body));
      return invited.body as { token: string; id: string };
    };

    before(async () => {
      opened = await backend.open();
      server = await startTestServer({ backend: opened, yaml: { simulator: { chunk_interval_ms: 0 } } });
      const ownerEmail = `owner-${Date.now()}@example.com`;
      const owner = await server.registerOn('enterprise', ownerEmail);
      orgId = owner.accountId;
      ownerKey = owner.key;
      const ownerSession = await signIn(ownerEmail);
      people.set('owner', { email: ownerEmail, ...ownerSession, memberId: `mem_${orgId}` });
      for (const role of MEMBER_ROLES.filter((r) => r !== 'owner')) {
        const email = `${role}-${Date.now()}@example.com`;
        const { token } = await invite(email, role);
        const mail = server.mails.find((m) => m.to === email);
        assert.ok(mail?.text.includes(token), 'the e-mail carries the token');
        const accepted = await server.call('POST', '/api/invitations/accept', {
          body: { token, email, password: PASSWORD },
        });
        assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
        assert.equal(accepted.body.member.role, role);
        people.set(role, { email, ...(await signIn(email)), memberId: accepted.body.member.id });
      }
    });
    after(async () => {
      await server?.close();
      await opened?.cleanup();
    });

    it('makes every sign-up a one-member organization with its owner', async () => {
      const listed = await server.call('GET', '/api/organizations', { key: ownerKey });
      assert.equal(listed.status, 200);
      assert.deepEqual(
        listed.body.data.map((o: { id: string; role: string }) => [o.id, o.role]),
        [[orgId, 'owner']],
      );
      const members = await server.call('GET', `/api/organizations/${orgId}/members`, { key: ownerKey });
      assert.deepEqual(
        members.body.data.map((m: { role: string }) => m.role).sort(),
        [...MEMBER_ROLES].sort(),
      );
    });

    it('answers every role × organization route as the role table says (403 naming the role when refused)', async () => {
      const target = people.get('viewer')!.memberId;
      const bodies: Record<string, unknown> = {};
      let checked = 0;
      for (const role of MEMBER_ROLES) {
        const person = people.get(role)!;
        for (const route of Object.keys(ROUTE_ACTIONS)) {
          const [method, pattern] = route.split(' ') as [string, string];
          if (pattern.startsWith('/api/playground')) continue; // a door of its own: checked below
          const path = pattern
            .replace('/api/organizations/:id', `/api/organizations/${orgId}`)
            .replace(':member_id', route.startsWith('DELETE') ? 'mem_nobody' : target)
            .replace(':invitation_id', 'inv_nobody')
            .replace(':id', 'nobody');
          // Removing another member takes the 'members' right (anyone may leave), checked in the service.
          const allowed =
            route === 'DELETE /api/organizations/:id/members/:member_id'
              ? mayDo(role, 'members')
              : mayDo(role, actionOf(method, pattern));
          const answer = await server.call(method, path, {
            headers: as(person),
            ...(method === 'GET' || method === 'DELETE' ? {} : { body: bodies[route] ?? {} }),
          });
          const byRole =
            answer.status === 403 && /your role in this organization/.test(answer.body.error.message);
          if (allowed) assert.ok(!byRole, `${role} ${route}: ${JSON.stringify(answer.body)}`);
          else {
            assert.equal(answer.status, 403, `${role} ${route} must be refused`);
            assert.ok(byRole, `${role} ${route}: ${JSON.stringify(answer.body)}`);
            assert.match(answer.body.error.message, new RegExp(`\\(${role}\\)`), `${role} ${route}`);
          }
          checked++;
        }
      }
      assert.ok(checked >= MEMBER_ROLES.length * 30, `checked ${checked} pairs`);
    });

    it('lets a viewer read but not create keys, and a developer see and change only its own keys', async () => {
      const viewer = people.get('viewer')!;
      const refused = await server.call('POST', '/api/keys', { headers: as(viewer), body: { name: 'x' } });
      assert.equal(refused.status, 403);
      const developer = people.get('developer')!;
      const mine = await server.call('POST', '/api/keys', { headers: as(developer), body: { name: 'dev' } });
      assert.equal(mine.status, 201);
      const listed = await server.call('GET', '/api/keys', { headers: as(developer) });
      const seen = listed.body.data.map((k: { id: string }) => k.id);
      assert.ok(seen.includes(mine.body.id));
      const ownerKeys = await server.call('GET', '/api/keys', { headers: as(people.get('owner')!) });
      const other = ownerKeys.body.data.find((k: { id: string }) => !seen.includes(k.id));
      assert.ok(other, 'the owner sees keys the developer does not');
      const revoke = await server.call('DELETE', `/api/keys/${other.id}`, { headers: as(developer) });
      assert.equal(revoke.status, 404, 'another member’s key is not the developer’s to revoke');
    });

    it('keeps tenants apart: another organization is not found, and a key acts only in its own', async () => {
      const strangerEmail = `stranger-${Date.now()}@example.com`;
      const stranger = await server.register(strangerEmail);
      const session = await signIn(strangerEmail);
      for (const path of [`/api/organizations/${orgId}`, `/api/organizations/${orgId}/members`]) {
        const answer = await server.call('GET', path, { headers: as(session) });
        assert.equal(answer.status, 404, path);
      }
      const byHeader = await server.call('GET', '/api/account', { headers: as(session) });
      assert.equal(byHeader.status, 404);
      const byKey = await server.call('GET', '/api/account', {
        key: stranger.key,
        headers: { 'x-tollgate-organization': orgId },
      });
      assert.equal(byKey.status, 403);
      const own = await server.call('GET', '/api/account', { key: stranger.key });
      assert.equal(own.body.id, stranger.accountId);
      const theirs = await server.call('GET', `/api/organizations/${stranger.accountId}/members`, {
        headers: as(people.get('owner')!, stranger.accountId),
      });
      assert.equal(theirs.status, 404);
    });

    it('always keeps an owner, and only an owner makes owners', async () => {
      const owner = people.get('owner')!;
      const admin = people.get('admin')!;
      const demote = await server.call('PATCH', `/api/organizations/${orgId}/members/${owner.memberId}`, {
        headers: as(owner),
        body: { role: 'admin' },
      });
      assert.equal(demote.status, 400);
      assert.match(demote.body.error.message, /keeps an owner/);
      const leave = await server.call('DELETE', `/api/organizations/${orgId}/members/${owner.memberId}`, {
        headers: as(owner),
      });
      assert.equal(leave.status, 400);
      const promote = await server.call('PATCH', `/api/organizations/${orgId}/members/${admin.memberId}`, {
        headers: as(admin),
        body: { role: 'owner' },
      });
      assert.equal(promote.status, 403);
    });

    it('refuses a member’s keys other models on every door, naming the member rule', async () => {
      const developer = people.get('developer')!;
      const limited = await server.call(
        'PATCH',
        `/api/organizations/${orgId}/members/${developer.memberId}`,
        {
          headers: as(people.get('admin')!),
          body: { allowed_models: ['model-b'] },
        },
      );
      assert.equal(limited.status, 200, JSON.stringify(limited.body));
      assert.deepEqual(limited.body.allowed_models, ['model-b']);
      const created = await server.call('POST', '/api/keys', {
        headers: as(developer),
        body: { name: 'door' },
      });
      const key = created.body.key as string;
      for (const [path, body] of [
        ['/v1/chat/completions', { max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }],
        ['/v1/responses', { input: 'hi' }],
        ['/v1/messages', { max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }],
      ] as const) {
        const refused = await server.call('POST', path, { key, body: { ...body, model: 'model-a' } });
        assert.equal(refused.status, 403, path);
        assert.match(JSON.stringify(refused.body), /member's allowed models rule/, path);
        const served = await server.call('POST', path, { key, body: { ...body, model: 'model-b' } });
        assert.equal(served.status, 200, `${path} ${JSON.stringify(served.body).slice(0, 200)}`);
      }
    });

    it('stops a removed member’s keys at once and logs who did it', async () => {
      const billingEmail = `leaver-${Date.now()}@example.com`;
      const { token } = await invite(billingEmail, 'developer');
      const accepted = await server.call('POST', '/api/invitations/accept', {
        body: { token, email: billingEmail, password: PASSWORD },
      });
      const again = await server.call('POST', '/api/invitations/accept', {
        body: { token, email: `x${billingEmail}`, password: PASSWORD },
      });
      assert.equal(again.status, 400, 'an invitation is single-use');
      const session = await signIn(billingEmail);
      const created = await server.call('POST', '/api/keys', {
        headers: as(session),
        body: { name: 'leaver' },
      });
      const chat = () =>
        server.call('POST', '/v1/chat/completions', {
          key: created.body.key,
          body: { model: 'model-b', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
        });
      assert.equal((await chat()).status, 200);
      const admin = people.get('admin')!;
      const removed = await server.call(
        'DELETE',
        `/api/organizations/${orgId}/members/${accepted.body.member.id}`,
        { headers: as(admin) },
      );
      assert.equal(removed.status, 200);
      assert.equal((await chat()).status, 403);
      const rows = await opened.db.all<{ actor: string; action: string }>(
        `SELECT actor, action FROM audit_log WHERE account_id = $1 ORDER BY at, id`,
        [orgId],
      );
      assert.ok(rows.some((r) => r.action === 'member.remove' && r.actor === admin.email));
      assert.ok(rows.some((r) => r.action === 'member.join'));
      assert.ok(rows.some((r) => r.action === 'member.update' && r.actor === admin.email));
    });

    it('holds a member’s spending limit across all its keys under concurrent requests', async () => {
      const email = `limited-${Date.now()}@example.com`;
      const { token } = await invite(email, 'developer');
      const accepted = await server.call('POST', '/api/invitations/accept', {
        body: { token, email, password: PASSWORD },
      });
      const session = await signIn(email);
      const keys: string[] = [];
      for (const name of ['one', 'two']) {
        const created = await server.call('POST', '/api/keys', { headers: as(session), body: { name } });
        assert.equal(created.status, 201);
        keys.push(created.body.key);
      }
      const messages = [{ role: 'user' as const, content: 'Member limit test: answer briefly please.' }];
      const each = costMicros(
        server.services.config.models.get('model-b')!,
        countPromptTokens(messages.map((m) => ({ ...m }))),
        5,
      );
      const limitMicros = each * 5 + Math.floor(each / 3);
      const limited = await server.call(
        'PATCH',
        `/api/organizations/${orgId}/members/${accepted.body.member.id}`,
        {
          key: ownerKey,
          body: { limit_usd: limitMicros / 1e6, limit_period: 'daily' },
        },
      );
      assert.equal(limited.status, 200, JSON.stringify(limited.body));
      assert.equal(limited.body.limit_period, 'daily');
      const answers = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          server.call('POST', '/v1/chat/completions', {
            key: keys[i % 2]!,
            body: { model: 'model-b', max_tokens: 5, messages },
          }),
        ),
      );
      const statuses = answers.map((a) => a.status);
      assert.equal(statuses.filter((s) => s === 200).length, 5, JSON.stringify(statuses));
      assert.equal(statuses.filter((s) => s === 402).length, 11, JSON.stringify(statuses));
      const refusal = answers.find((a) => a.status === 402)!;
      assert.match(refusal.body.error.message, /member's spending limit rule/);
      await server.services.settlements.flush();
      const row = await opened.db.get<{ s: number | string | null }>(
        `SELECT CAST(SUM(u.cost_micros) AS BIGINT) AS s FROM usage_records u JOIN api_keys k ON k.id = u.key_id
         WHERE k.member_id = $1`,
        [accepted.body.member.id],
      );
      assert.equal(Number(row?.s), each * 5);
      assert.ok(Number(row?.s) <= limitMicros);
    });

    it('shows operators an organization’s members and roles, and no one else', async () => {
      const listed = await server.call('GET', `/api/admin/organizations/${orgId}/members`, {
        key: ADMIN_KEY,
      });
      assert.equal(listed.status, 200, JSON.stringify(listed.body));
      assert.ok(listed.body.data.some((m: { role: string }) => m.role === 'owner'));
      assert.ok(listed.body.invitations.length >= 4);
      const refused = await server.call('GET', `/api/admin/organizations/${orgId}/members`, {
        key: ownerKey,
      });
      assert.equal(refused.status, 403);
    });

    it('lets the billing member buy a plan for the organization, and no developer', async () => {
      const developer = await server.call('POST', '/api/billing/checkout', {
        headers: as(people.get('developer')!),
        body: { plan: 'starter' },
      });
      assert.equal(developer.status, 403);
      const checkout = await server.call('POST', '/api/billing/checkout', {
        headers: as(people.get('billing')!),
        body: { plan: 'starter' },
      });
      assert.equal(checkout.status, 201, JSON.stringify(checkout.body));
      const paid = await fetch(checkout.body.checkout_url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ outcome: 'success' }),
      });
      assert.ok(paid.status < 400, String(paid.status));
      const account = await server.call('GET', '/api/account', { key: ownerKey });
      assert.equal(account.body.plan, 'starter');
    });

    it('stops a former owner’s first key once ownership moved and the former owner was removed', async () => {
      const email = `founder-${Date.now()}@example.com`;
      const founder = await server.registerOn('enterprise', email);
      const heirEmail = `heir-${Date.now()}@example.com`;
      const invited = await server.call('POST', `/api/organizations/${founder.accountId}/invitations`, {
        key: founder.key,
        body: { email: heirEmail, role: 'owner' },
      });
      const accepted = await server.call('POST', '/api/invitations/accept', {
        body: { token: invited.body.token, email: heirEmail, password: PASSWORD },
      });
      const heir = await signIn(heirEmail);
      const removed = await server.call(
        'DELETE',
        `/api/organizations/${founder.accountId}/members/mem_${founder.accountId}`,
        { headers: as(heir, founder.accountId) },
      );
      assert.equal(removed.status, 200, JSON.stringify(removed.body));
      assert.equal(accepted.body.member.role, 'owner');
      const chat = await server.call('POST', '/v1/chat/completions', {
        key: founder.key,
        body: { model: 'model-b', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(chat.status, 403);
    });

    it('refuses a revoked or unknown invitation', async () => {
      const { token, id } = await invite(`revoked-${Date.now()}@example.com`, 'viewer');
      const revoked = await server.call('DELETE', `/api/organizations/${orgId}/invitations/${id}`, {
        key: ownerKey,
      });
      assert.equal(revoked.status, 204);
      const accept = await server.call('POST', '/api/invitations/accept', {
        body: { token, email: `revoked2-${Date.now()}@example.com`, password: PASSWORD },
      });
      assert.equal(accept.status, 400);
      assert.match(accept.body.error.message, /revoked/);
    });
  });
}
