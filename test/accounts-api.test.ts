import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { createTestClock } from './helpers/clock.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';

const ERROR_SHAPE = (body: any, code: string): void => {
  assert.equal(typeof body?.error?.message, 'string', JSON.stringify(body));
  assert.equal(body.error.code, code, JSON.stringify(body));
  assert.equal(typeof body.error.type, 'string');
  assert.deepEqual(Object.keys(body), ['error']);
};

for (const backend of BACKENDS) {
  const skip = await backend.unavailable();
  describe(`accounts and keys on ${backend.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let server: TestServer;
    const time = createTestClock(Date.parse('2026-11-01T10:00:00Z'));

    before(async () => {
      opened = await backend.open();
      server = await startTestServer({ backend: opened, clock: time.clock });
    });
    after(async () => {
      await server?.close();
      await opened?.cleanup();
    });

    it('registration answers 201 with the account, a key shown once and the trial credit', async () => {
      const { status, body, headers } = await server.call('POST', '/api/auth/register', {
        body: { email: 'Alice@Example.com', password: 'correct horse battery' },
      });
      assert.equal(status, 201);
      assert.match(headers.get('x-request-id') ?? '', /^req_/);
      assert.equal(body.account.email, 'alice@example.com');
      assert.equal(body.account.plan, 'free_trial');
      assert.equal(body.account.email_verified, false);
      assert.match(body.api_key.key, /^tg-/);
      const account = await server.call('GET', '/api/account', { key: body.api_key.key });
      assert.equal(account.status, 200);
      assert.equal(account.body.balance_usd, 1);
      assert.equal(account.body.credits[0].kind, 'trial');
      assert.equal(account.body.credits[0].expires_at, new Date(time.now + 14 * 86_400_000).toISOString());
      const keys = await server.call('GET', '/api/keys', { key: body.api_key.key });
      assert.equal(keys.body.data.length, 1);
      assert.equal(keys.body.data[0].key, undefined, 'a listed key never shows its secret');
    });

    it('bad registrations get the error object with a 4xx status', async () => {
      const cases: [unknown, number, string][] = [
        [{ email: 'not-an-email', password: 'long enough pw' }, 400, 'invalid_request'],
        [{ email: 'bob@example.com', password: 'short' }, 400, 'invalid_request'],
        [{ email: 'bob@example.com' }, 400, 'invalid_request'],
        [{ email: 42, password: 'long enough pw' }, 400, 'invalid_request'],
        [{ email: 'bob@example.com', password: 'long enough pw', admin: true }, 400, 'invalid_request'],
        ['{not json', 400, 'invalid_request'],
        [{ email: 'alice@example.com', password: 'another password' }, 409, 'conflict'],
      ];
      for (const [body, status, code] of cases) {
        const response = await server.call('POST', '/api/auth/register', { body });
        assert.equal(response.status, status, JSON.stringify(body));
        ERROR_SHAPE(response.body, code);
      }
      const field = await server.call('POST', '/api/auth/register', {
        body: { email: 'bob@example.com', password: 'x' },
      });
      assert.match(field.body.error.message, /password/);
    });

    it('e-mail verification works once; a reused or expired token gets 400', async () => {
      const email = 'verify-me@example.com';
      const { key } = await server.register(email);
      const mail = server.mails.find((m) => m.to === email);
      const token = /token: (\S+)/.exec(mail?.text ?? '')?.[1];
      assert.ok(token, 'the mailer got a token');
      const ok = await server.call('POST', '/api/auth/verify-email', { body: { token } });
      assert.equal(ok.status, 200);
      assert.equal((await server.call('GET', '/api/account', { key })).body.email_verified, true);
      const again = await server.call('POST', '/api/auth/verify-email', { body: { token } });
      assert.equal(again.status, 400);
      ERROR_SHAPE(again.body, 'invalid_request');

      await server.register('late@example.com');
      const lateToken = /token: (\S+)/.exec(
        server.mails.find((m) => m.to === 'late@example.com')?.text ?? '',
      )?.[1];
      time.advance(3 * 86_400_000);
      const expired = await server.call('POST', '/api/auth/verify-email', { body: { token: lateToken } });
      assert.equal(expired.status, 400);
      assert.match(expired.body.error.message, /expired/);
    });

    it('missing or unknown keys get 401; revoked keys and suspended accounts get 403', async () => {
      const missing = await server.call('GET', '/api/account');
      assert.equal(missing.status, 401);
      ERROR_SHAPE(missing.body, 'unauthorized');
      const unknown = await server.call('GET', '/api/account', {
        key: 'tg-nobody-has-this-key-000000000000',
      });
      assert.equal(unknown.status, 401);
      const basic = await server.call('GET', '/api/account', { headers: { authorization: 'Basic abc' } });
      assert.equal(basic.status, 401);

      const { key, accountId } = await server.register();
      const second = await server.call('POST', '/api/keys', { key, body: { name: 'ci' } });
      assert.equal(second.status, 201);
      assert.equal(
        (await server.call('GET', '/api/account', { key: second.body.key })).status,
        200,
        'warms the cache',
      );
      const revoked = await server.call('DELETE', `/api/keys/${second.body.id}`, { key });
      assert.equal(revoked.status, 200);
      assert.equal(revoked.body.status, 'revoked');
      const refused = await server.call('GET', '/api/account', { key: second.body.key });
      assert.equal(refused.status, 403, 'a revoke takes effect at once despite the cache');
      ERROR_SHAPE(refused.body, 'forbidden');

      assert.equal(
        (await server.call('POST', `/api/admin/accounts/${accountId}/suspend`, { key: ADMIN_KEY })).status,
        200,
      );
      const suspended = await server.call('GET', '/api/account', { key });
      assert.equal(suspended.status, 403);
      assert.match(suspended.body.error.message, /suspended/);
      assert.equal(
        (await server.call('POST', `/api/admin/accounts/${accountId}/unsuspend`, { key: ADMIN_KEY })).status,
        200,
      );
      assert.equal((await server.call('GET', '/api/account', { key })).status, 200);
    });

    it('the chat route refuses a key alike on its first use and from the cache: 401 unknown, 403 revoked, 403 elsewhere', async () => {
      const chat = (key: string) =>
        server.call('POST', '/v1/chat/completions', {
          key,
          body: { model: 'model-b', messages: [{ role: 'user', content: 'hi' }] },
        });
      for (let i = 0; i < 2; i++) {
        const unknown = await chat('tg-nobody-has-this-key-000000000000');
        assert.equal(unknown.status, 401);
        ERROR_SHAPE(unknown.body, 'unauthorized');
        const malformed = await chat('not a key');
        assert.equal(malformed.status, 401);
        ERROR_SHAPE(malformed.body, 'unauthorized');
      }
      const { key } = await server.register();
      const second = await server.call('POST', '/api/keys', { key, body: { name: 'to-revoke' } });
      assert.equal((await server.call('DELETE', `/api/keys/${second.body.id}`, { key })).status, 200);
      const elsewhere = await server.call('POST', '/api/keys', {
        key,
        body: { name: 'office', allowed_ips: ['203.0.113.0/24'] },
      });
      // The first call looks each key up in the store, the second finds it in the cache.
      for (let i = 0; i < 2; i++) {
        const revoked = await chat(second.body.key);
        assert.equal(revoked.status, 403);
        assert.match(revoked.body.error.message, /revoked/);
        const refused = await chat(elsewhere.body.key);
        assert.equal(refused.status, 403);
        assert.match(refused.body.error.message, /may not be used from/);
      }
      const admin = await chat(ADMIN_KEY);
      assert.equal(admin.status, 403, 'the admin key is not a user key on the chat route');
    });

    it('rotating a key gives a new secret and the old one stops working', async () => {
      const { key, keyId } = await server.register();
      const rotated = await server.call('POST', `/api/keys/${keyId}/rotate`, { key });
      assert.equal(rotated.status, 200);
      assert.notEqual(rotated.body.key, key);
      assert.equal((await server.call('GET', '/api/account', { key })).status, 401);
      assert.equal((await server.call('GET', '/api/account', { key: rotated.body.key })).status, 200);
      const other = await server.call('POST', '/api/keys/key_not_mine/rotate', { key: rotated.body.key });
      assert.equal(other.status, 404);
    });

    it('a key with allowed_ips refuses other client addresses with 403', async () => {
      const { key } = await server.register();
      const bad = await server.call('POST', '/api/keys', {
        key,
        body: { name: 'x', allowed_ips: ['not-a-cidr'] },
      });
      assert.equal(bad.status, 400);
      const elsewhere = await server.call('POST', '/api/keys', {
        key,
        body: { name: 'office', allowed_ips: ['203.0.113.0/24'] },
      });
      const local = await server.call('POST', '/api/keys', {
        key,
        body: { name: 'local', allowed_ips: ['127.0.0.0/8', '::1/128'] },
      });
      assert.equal((await server.call('GET', '/api/account', { key: elsewhere.body.key })).status, 403);
      assert.equal((await server.call('GET', '/api/account', { key: local.body.key })).status, 200);
    });

    it('admin routes need the admin key: a user key gets 403, none gets 401', async () => {
      const { key } = await server.register('findme@example.com');
      assert.equal((await server.call('GET', '/api/admin/accounts', { key })).status, 403);
      assert.equal((await server.call('GET', '/api/admin/accounts')).status, 401);
      const page = await server.call('GET', '/api/admin/accounts?search=findme&limit=5', { key: ADMIN_KEY });
      assert.equal(page.status, 200);
      assert.equal(page.body.total, 1);
      assert.equal(page.body.data[0].email, 'findme@example.com');
      const all = await server.call('GET', '/api/admin/accounts?limit=2', { key: ADMIN_KEY });
      assert.equal(all.body.data.length, 2);
      assert.ok(all.body.total > 2);
      const id = page.body.data[0].id;
      const plan = await server.call('PUT', `/api/admin/accounts/${id}/plan`, {
        key: ADMIN_KEY,
        body: { plan: 'pro' },
      });
      assert.equal(plan.status, 200);
      assert.equal(plan.body.plan, 'pro');
      assert.equal((await server.call('GET', '/api/account', { key })).body.limits.requests_per_minute, 300);
      const badPlan = await server.call('PUT', `/api/admin/accounts/${id}/plan`, {
        key: ADMIN_KEY,
        body: { plan: 'gold' },
      });
      assert.equal(badPlan.status, 400);
      assert.equal(
        (await server.call('POST', '/api/admin/accounts/acct_missing/suspend', { key: ADMIN_KEY })).status,
        404,
      );
    });

    it('health, plans and models need no key', async () => {
      const open = await server.call('GET', '/health');
      assert.equal(open.status, 200);
      assert.deepEqual(open.body, { status: 'ok' }, 'without the admin key, the status only');
      const health = await server.call('GET', '/health', { key: ADMIN_KEY });
      assert.equal(health.status, 200);
      assert.equal(health.body.status, 'ok');
      assert.equal(health.body.database.ok, true);
      assert.equal(typeof health.body.database.latency_ms, 'number');
      const plans = await server.call('GET', '/plans');
      assert.deepEqual(
        plans.body.data.map((p: any) => [p.id, p.requests_per_minute, p.tokens_per_minute, p.daily_tokens]),
        [
          ['free_trial', 10, 50_000, 500_000],
          ['starter', 60, 300_000, 5_000_000],
          ['pro', 300, 1_500_000, 25_000_000],
          ['enterprise', null, null, null],
        ],
      );
      const models = await server.call('GET', '/v1/models');
      assert.deepEqual(
        models.body.data.map((m: any) => m.id),
        ['model-a', 'model-b', 'model-c', 'model-d', 'model-e', 'model-f', 'embed-a', 'embed-b'],
      );
      assert.deepEqual(models.body.data[0].pricing, {
        input_usd_per_million: 3.5,
        output_usd_per_million: 18,
        cached_input_usd_per_million: 0.35,
        cache_write_usd_per_million: 3.5,
        cache_write_1h_usd_per_million: 3.5,
      });
    });

    it('unknown routes, wrong methods and oversized bodies get the error object', async () => {
      const unknown = await server.call('GET', '/nope');
      assert.equal(unknown.status, 404);
      ERROR_SHAPE(unknown.body, 'not_found');
      assert.ok(unknown.headers.get('x-request-id'));
      const method = await server.call('DELETE', '/plans');
      assert.equal(method.status, 405);
      ERROR_SHAPE(method.body, 'method_not_allowed');
      const big = await server.call('POST', '/api/auth/register', {
        body: JSON.stringify({ email: 'a@b.co', password: 'x'.repeat(5 * 1024 * 1024) }),
      });
      assert.equal(big.status, 413);
      ERROR_SHAPE(big.body, 'invalid_request');
      const text = await server.call('POST', '/api/auth/register', {
        body: 'email=a',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assert.equal(text.status, 415);
      ERROR_SHAPE(text.body, 'invalid_request');
    });

    it('no API key, password or token is stored in plain text', async () => {
      const email = 'secrets@example.com';
      const password = 'a very particular password';
      const response = await server.call('POST', '/api/auth/register', { body: { email, password } });
      const secret: string = response.body.api_key.key;
      const token = /token: (\S+)/.exec(server.mails.find((m) => m.to === email)?.text ?? '')?.[1] ?? '';
      const tables = ['accounts', 'api_keys', 'email_tokens', 'settings'];
      for (const table of tables) {
        const dump = JSON.stringify(await opened.db.all(`SELECT * FROM ${table}`));
        assert.ok(!dump.includes(secret), `${table} holds no API key`);
        assert.ok(!dump.includes(password), `${table} holds no password`);
        assert.ok(!dump.includes(token), `${table} holds no e-mail token`);
        assert.ok(!dump.includes(ADMIN_KEY), `${table} holds no admin key`);
      }
      const stored = await opened.db.get<{ password_hash: string }>(
        'SELECT password_hash FROM accounts WHERE email = $1',
        [email],
      );
      assert.match(stored?.password_hash ?? '', /^scrypt\$/);
    });

    it('the keys list says when each key was last used: never before its first request, then that request', async () => {
      const { key, keyId } = await server.register();
      const idle = await server.call('POST', '/api/keys', { key, body: { name: 'idle' } });
      assert.equal(idle.status, 201);
      const before = await server.call('GET', '/api/keys', { key });
      for (const listed of before.body.data) assert.equal(listed.last_used_at, null, listed.name);
      time.advance(60_000);
      const usedAt = new Date(time.clock()).toISOString();
      const answer = await server.call('POST', '/v1/chat/completions', {
        key,
        body: { model: 'model-b', messages: [{ role: 'user', content: 'Hello' }] },
      });
      assert.equal(answer.status, 200);
      await server.services.settlements.flush();
      const after = await server.call('GET', '/api/keys', { key });
      const byId = new Map(after.body.data.map((listed: any) => [listed.id, listed]));
      assert.equal((byId.get(keyId) as any).last_used_at, usedAt);
      assert.equal((byId.get(idle.body.id) as any).last_used_at, null);
    });
  });
}
