import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';

/** The spec's error object, with OpenAI's `param`. */
function assertError(
  response: { status: number; body: any },
  status: number,
  code: string,
  param: string | null,
): void {
  assert.equal(response.status, status, JSON.stringify(response.body));
  assert.deepEqual(Object.keys(response.body), ['error']);
  assert.equal(response.body.error.code, code);
  assert.equal(typeof response.body.error.message, 'string');
  assert.equal(typeof response.body.error.type, 'string');
  assert.equal(response.body.error.param, param, response.body.error.message);
}

describe('routes mounted as prefixed plugins, and their edges', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  before(async () => {
    opened = await BACKENDS[0]!.open();
    server = await startTestServer({ backend: opened });
  });
  after(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  it('/health: no key gives the status, the admin key the report, a wrong key 401', async () => {
    const open = await server.call('GET', '/health');
    assert.equal(open.status, 200);
    assert.deepEqual(open.body, { status: 'ok' });
    const admin = await server.call('GET', '/health', { key: ADMIN_KEY });
    assert.equal(admin.status, 200);
    assert.equal(admin.body.status, 'ok');
    assert.ok('database' in admin.body, JSON.stringify(admin.body));
    const { key } = await server.register();
    assert.deepEqual((await server.call('GET', '/health', { key })).body, { status: 'ok' });

    assertError(
      await server.call('GET', '/health', { key: 'tg-wrong-0123456789abcdef0123456789' }),
      401,
      'unauthorized',
      null,
    );
    assertError(await server.call('GET', '/health', { key: `${ADMIN_KEY}x` }), 401, 'unauthorized', null);
  });

  it('a validation failure names the field in param, with a message a person can act on', async () => {
    const admin = { key: ADMIN_KEY };
    const limit = await server.call('GET', '/api/admin/accounts?limit=abc', admin);
    assertError(limit, 400, 'invalid_request', 'limit');
    assert.equal(limit.body.error.message, 'querystring.limit must be a whole number from 1 to 500');
    const offset = await server.call('GET', '/api/admin/audit?offset=-1', admin);
    assertError(offset, 400, 'invalid_request', 'offset');
    assert.doesNotMatch(offset.body.error.message, /\^|\\d/, 'no regular expression in the message');
    const days = await server.call('GET', '/api/admin/stats/daily?days=0', admin);
    assertError(days, 400, 'invalid_request', 'days');
    assert.match(days.body.error.message, /^querystring\.days must be a whole number from 1 to 399/);

    const status = await server.call('GET', '/api/admin/accounts?status=gone', admin);
    assertError(status, 400, 'invalid_request', 'status');
    assert.equal(status.body.error.message, 'querystring.status must be one of "active", "suspended"');
    const unknown = await server.call('GET', '/api/admin/accounts?colour=red', admin);
    assertError(unknown, 400, 'invalid_request', 'colour');
    assert.equal(unknown.body.error.message, 'querystring has unknown field colour');
    const missing = await server.call('GET', '/api/admin/usage/export?from=2026-01-01', admin);
    assertError(missing, 400, 'invalid_request', 'to');
    assert.equal(missing.body.error.message, 'querystring must have the field to');

    const credit = await server.call('POST', '/api/admin/accounts/acct_x/credits', {
      ...admin,
      body: { amount_usd: 'ten' },
    });
    assertError(credit, 400, 'invalid_request', 'amount_usd');
    assert.equal(credit.body.error.message, 'body.amount_usd must be number');
    const expiry = await server.call('POST', '/api/admin/accounts/acct_x/credits', {
      ...admin,
      body: { amount_usd: 1, expires_at: 'soon' },
    });
    assertError(expiry, 400, 'invalid_request', 'expires_at');
    assert.equal(expiry.body.error.message, 'body.expires_at must be a valid date-time');
    const models = await server.call('POST', '/api/admin/announcements', {
      ...admin,
      body: { title: 't', body: 'b', models: ['model-a', 7] },
    });
    assertError(models, 400, 'invalid_request', 'models[1]');
    assert.equal(models.body.error.message, 'body.models[1] must be string');

    const { key } = await server.register();
    const day = await server.call('GET', '/api/usage?from=yesterday', { key });
    assertError(day, 400, 'invalid_request', 'from');
    assert.equal(day.body.error.message, 'querystring.from must be a UTC day such as 2026-01-31');
    const register = await server.call('POST', '/api/auth/register', { body: { email: 'a@example.com' } });
    assertError(register, 400, 'invalid_request', 'password');
    assert.equal(register.body.error.message, 'body must have the field password');
  });

  it('an operator cannot remove its own operator role; another operator and the admin key can', async () => {
    const email = `op-${Date.now()}@example.com`;
    const first = await server.register(email);
    const second = await server.register();
    for (const account of [first, second]) {
      const { email: address } = (await server.call('GET', '/api/account', { key: account.key })).body;
      const granted = await server.call('POST', '/api/admin/operators', {
        key: ADMIN_KEY,
        body: { email: address },
      });
      assert.equal(granted.status, 200, JSON.stringify(granted.body));
    }

    const self = await server.call('DELETE', `/api/admin/operators/${first.accountId}`, { key: first.key });
    assertError(self, 409, 'conflict', 'id');
    assert.match(self.body.error.message, /cannot remove its own operator role/);
    assert.equal(
      (await server.call('GET', '/api/admin/operators', { key: first.key })).status,
      200,
      'still an operator',
    );
    const audit = await server.call('GET', `/api/admin/audit?account_id=${first.accountId}`, {
      key: ADMIN_KEY,
    });
    assert.ok(
      audit.body.data.every((entry: any) => entry.action !== 'operator.revoke'),
      'a refused revocation is not audited',
    );

    const byOther = await server.call('DELETE', `/api/admin/operators/${first.accountId}`, {
      key: second.key,
    });
    assert.equal(byOther.status, 200, JSON.stringify(byOther.body));
    assert.equal(byOther.body.role, 'user');
    const byAdmin = await server.call('DELETE', `/api/admin/operators/${second.accountId}`, {
      key: ADMIN_KEY,
    });
    assert.equal(byAdmin.status, 200, JSON.stringify(byAdmin.body));
    assert.equal(byAdmin.body.role, 'user');
  });

  it('inside a prefix, a wrong method is 405 with Allow and an unknown path 404, as the spec error object', async () => {
    const wrongMethod = await server.call('DELETE', '/api/account', { key: ADMIN_KEY });
    assertError(wrongMethod, 405, 'method_not_allowed', null);
    assert.equal(wrongMethod.headers.get('allow'), 'GET, HEAD');
    const keys = await server.call('PUT', '/api/keys/key_x/rotate');
    assertError(keys, 405, 'method_not_allowed', null);
    assert.equal(keys.headers.get('allow'), 'POST');
    assertError(await server.call('GET', '/api/admin/nothing', { key: ADMIN_KEY }), 404, 'not_found', null);
    assertError(await server.call('GET', '/api/auth/nothing'), 404, 'not_found', null);
    // The Stripe webhook's raw-text body parser stays in its plugin: JSON elsewhere is still parsed and checked.
    const notJson = await server.call('POST', '/api/auth/register', {
      body: 'email=a@example.com',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assertError(notJson, 415, 'invalid_request', null);
  });
});
