import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { createTestClock } from './helpers/clock.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';

const PASSWORD = 'correct horse battery';
const HOUR = 3_600_000;

interface Browser {
  cookie: string;
  csrf: string;
}

/** Signs in as a browser would; resolves to the cookie pair and the CSRF token. */
async function signIn(server: TestServer, email: string, password = PASSWORD): Promise<Browser> {
  const response = await server.call('POST', '/api/auth/login', { body: { email, password } });
  assert.equal(response.status, 200, JSON.stringify(response.body));
  const setCookie = response.headers.get('set-cookie') ?? '';
  return { cookie: setCookie.split(';')[0] ?? '', csrf: response.body.csrf_token };
}

const as = (browser: Browser, csrf = true): Record<string, string> => ({
  cookie: browser.cookie,
  ...(csrf ? { 'x-csrf-token': browser.csrf } : {}),
});

// The HTTP behaviour is the same on both engines; the store's part is held to its contract on both in
// test/sessions-store-contract.test.ts. Password hashing makes this suite costly, so it runs once.
for (const backend of BACKENDS.filter((b) => b.name === 'sqlite')) {
  const skip = await backend.unavailable();
  describe(`dashboard sessions on ${backend.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let server: TestServer;
    const time = createTestClock(Date.parse('2026-11-01T10:00:00Z'));
    let n = 0;
    const fresh = async (): Promise<{ email: string; accountId: string; key: string }> => {
      const email = `s${++n}-${backend.name}@example.com`;
      return { email, ...(await server.register(email)) };
    };

    before(async () => {
      opened = await backend.open();
      server = await startTestServer({
        backend: opened,
        clock: time.clock,
        extra: { sessionPolicy: { attemptsPerEmailPerMinute: 3, attemptsPerIpPerMinute: 1000 } },
      });
    });
    after(async () => {
      await server?.close();
      await opened?.cleanup();
    });

    it('sign-in sets an HttpOnly SameSite=Lax cookie that /api accepts in place of a key', async () => {
      const user = await fresh();
      const response = await server.call('POST', '/api/auth/login', {
        body: { email: user.email.toUpperCase(), password: PASSWORD },
      });
      assert.equal(response.status, 200);
      const setCookie = response.headers.get('set-cookie') ?? '';
      assert.match(setCookie, /^tollgate_session=tgs-/);
      assert.match(setCookie, /HttpOnly/);
      assert.match(setCookie, /SameSite=Lax/);
      assert.doesNotMatch(setCookie, /Secure/, 'plain-HTTP sites get no Secure flag');
      assert.equal(response.body.account.id, user.accountId);
      assert.equal(typeof response.body.csrf_token, 'string');
      const cookie = setCookie.split(';')[0] ?? '';
      const account = await server.call('GET', '/api/account', { headers: { cookie } });
      assert.equal(account.status, 200);
      assert.equal(account.body.id, user.accountId);
      assert.equal(account.body.balance_usd, 1);
      const session = await server.call('GET', '/api/auth/session', { headers: { cookie } });
      assert.equal(session.body.csrf_token, response.body.csrf_token);
      // The admin API never accepts a session.
      const admin = await server.call('GET', '/api/admin/accounts', { headers: { cookie } });
      assert.equal(admin.status, 403);
    });

    it('a wrong password and an unknown e-mail get the same 401', async () => {
      const user = await fresh();
      const wrong = await server.call('POST', '/api/auth/login', {
        body: { email: user.email, password: 'nope nope' },
      });
      const unknown = await server.call('POST', '/api/auth/login', {
        body: { email: `nobody-${backend.name}@example.com`, password: 'nope nope' },
      });
      assert.equal(wrong.status, 401);
      assert.equal(unknown.status, 401);
      assert.deepEqual(wrong.body, unknown.body);
      assert.equal(wrong.headers.get('set-cookie'), null);
    });

    it('sign-in is throttled per e-mail, known or not, with the same answer', async () => {
      const user = await fresh();
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        const r = await server.call('POST', '/api/auth/login', {
          body: { email: user.email, password: 'wrong one' },
        });
        statuses.push(r.status);
      }
      assert.deepEqual(statuses, [401, 401, 401, 429]);
      const right = await server.call('POST', '/api/auth/login', {
        body: { email: user.email, password: PASSWORD },
      });
      assert.equal(right.status, 429, 'even the right password waits out the throttle');
      assert.ok(Number(right.headers.get('retry-after')) > 0);
      const ghost = `ghost-${backend.name}@example.com`;
      const ghostStatuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        const r = await server.call('POST', '/api/auth/login', {
          body: { email: ghost, password: 'wrong one' },
        });
        ghostStatuses.push(r.status);
      }
      assert.deepEqual(ghostStatuses, statuses);
      time.advance(61_000);
      await signIn(server, user.email);
    });

    it('a state-changing cookie request needs the CSRF token; a key does not', async () => {
      const user = await fresh();
      const browser = await signIn(server, user.email);
      const refused = await server.call('POST', '/api/keys', {
        headers: as(browser, false),
        body: { name: 'x' },
      });
      assert.equal(refused.status, 403);
      assert.match(refused.body.error.message, /x-csrf-token/);
      const wrong = await server.call('POST', '/api/keys', {
        headers: { ...as(browser, false), 'x-csrf-token': 'A'.repeat(browser.csrf.length) },
        body: { name: 'x' },
      });
      assert.equal(wrong.status, 403);
      const logout = await server.call('POST', '/api/auth/logout', { headers: as(browser, false) });
      assert.equal(logout.status, 403, 'sign-out needs the token too');
      const created = await server.call('POST', '/api/keys', { headers: as(browser), body: { name: 'web' } });
      assert.equal(created.status, 201);
      assert.match(created.body.key, /^tg-/);
      const byKey = await server.call('POST', '/api/keys', { key: user.key, body: { name: 'cli' } });
      assert.equal(byKey.status, 201);
      const keys = await server.call('GET', '/api/keys', { headers: as(browser, false) });
      assert.equal(keys.body.data.length, 3);
    });

    it('a cross-site sign-in is refused', async () => {
      const user = await fresh();
      const response = await server.call('POST', '/api/auth/login', {
        headers: { origin: 'https://evil.example' },
        body: { email: user.email, password: PASSWORD },
      });
      assert.equal(response.status, 403);
      assert.equal(response.headers.get('set-cookie'), null);
      const garbage = await server.call('POST', '/api/auth/login', {
        headers: { origin: 'null' },
        body: { email: user.email, password: PASSWORD },
      });
      assert.equal(garbage.status, 403, 'an opaque origin (sandboxed frame) is cross-site too');
      const same = await server.call('POST', '/api/auth/login', {
        headers: { origin: server.url },
        body: { email: user.email, password: PASSWORD },
      });
      assert.equal(same.status, 200);
    });

    it('signing out ends the session: the old cookie gets 401', async () => {
      const user = await fresh();
      const browser = await signIn(server, user.email);
      const out = await server.call('POST', '/api/auth/logout', { headers: as(browser) });
      assert.equal(out.status, 200);
      assert.match(out.headers.get('set-cookie') ?? '', /tollgate_session=;/);
      const after = await server.call('GET', '/api/account', { headers: as(browser) });
      assert.equal(after.status, 401);
      assert.equal(after.body.error.code, 'unauthorized');
      assert.equal(
        (await server.call('GET', '/api/account', { key: user.key })).status,
        200,
        'keys are untouched',
      );
    });

    it('a session ends after 12 idle hours and 7 days after sign-in however busy', async () => {
      const user = await fresh();
      const idle = await signIn(server, user.email);
      time.advance(11 * HOUR);
      assert.equal((await server.call('GET', '/api/account', { headers: as(idle) })).status, 200);
      time.advance(11 * HOUR);
      assert.equal(
        (await server.call('GET', '/api/account', { headers: as(idle) })).status,
        200,
        'use renews it',
      );
      time.advance(12 * HOUR);
      assert.equal((await server.call('GET', '/api/account', { headers: as(idle) })).status, 401);
      const busy = await signIn(server, user.email);
      for (let day = 0; day < 6; day++) {
        time.advance(11 * HOUR);
        assert.equal((await server.call('GET', '/api/account', { headers: as(busy) })).status, 200);
        time.advance(11 * HOUR);
        assert.equal((await server.call('GET', '/api/account', { headers: as(busy) })).status, 200);
      }
      time.advance(36 * HOUR);
      assert.equal((await server.call('GET', '/api/account', { headers: as(busy) })).status, 401);
    });

    it('password reset: same answer for any e-mail, a single-use link valid one hour, sessions end', async () => {
      const user = await fresh();
      const browser = await signIn(server, user.email);
      const before = server.mails.length;
      const known = await server.call('POST', '/api/auth/password-reset', { body: { email: user.email } });
      const unknown = await server.call('POST', '/api/auth/password-reset', {
        body: { email: `nobody-reset-${backend.name}@example.com` },
      });
      assert.equal(known.status, 202);
      assert.deepEqual(known.body, unknown.body);
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(server.mails.length, before + 1, 'only the registered address gets mail');
      const mail = server.mails.at(-1);
      assert.equal(mail?.to, user.email);
      const token = /reset-password\?token=(\S+)/.exec(mail?.text ?? '')?.[1] ?? '';
      assert.match(token, /^pr-/);
      const stored = await opened.db.get<{ n: number }>(
        'SELECT COUNT(*) AS n FROM password_reset_tokens WHERE token_hash = $1',
        [token],
      );
      assert.equal(Number(stored?.n), 0, 'the token is stored hashed');
      const short = await server.call('POST', '/api/auth/password-reset/confirm', {
        body: { token, password: 'short' },
      });
      assert.equal(short.status, 400);
      const done = await server.call('POST', '/api/auth/password-reset/confirm', {
        body: { token, password: 'a brand new password' },
      });
      assert.equal(done.status, 200);
      assert.equal((await server.call('GET', '/api/account', { headers: as(browser) })).status, 401);
      const again = await server.call('POST', '/api/auth/password-reset/confirm', {
        body: { token, password: 'another new password' },
      });
      assert.equal(again.status, 400);
      assert.match(again.body.error.message, /already used/);
      assert.equal(
        (await server.call('POST', '/api/auth/login', { body: { email: user.email, password: PASSWORD } }))
          .status,
        401,
      );
      await signIn(server, user.email, 'a brand new password');
      // An hour later a link is void.
      await server.call('POST', '/api/auth/password-reset', { body: { email: user.email } });
      await new Promise((resolve) => setImmediate(resolve));
      const late = /reset-password\?token=(\S+)/.exec(server.mails.at(-1)?.text ?? '')?.[1] ?? '';
      time.advance(HOUR + 1);
      const expired = await server.call('POST', '/api/auth/password-reset/confirm', {
        body: { token: late, password: 'yet another password' },
      });
      assert.equal(expired.status, 400);
      assert.match(expired.body.error.message, /expired/);
    });

    it('changing the password ends the other sessions; signing out everywhere ends all', async () => {
      const user = await fresh();
      const here = await signIn(server, user.email);
      const there = await signIn(server, user.email);
      const wrong = await server.call('POST', '/api/auth/password', {
        headers: as(here),
        body: { current_password: 'not it at all', new_password: 'a new password' },
      });
      assert.equal(wrong.status, 400);
      const changed = await server.call('POST', '/api/auth/password', {
        headers: as(here),
        body: { current_password: PASSWORD, new_password: 'a new password' },
      });
      assert.equal(changed.status, 200);
      assert.equal((await server.call('GET', '/api/account', { headers: as(here) })).status, 200);
      assert.equal((await server.call('GET', '/api/account', { headers: as(there) })).status, 401);
      const third = await signIn(server, user.email, 'a new password');
      const everywhere = await server.call('POST', '/api/auth/logout-everywhere', { headers: as(here) });
      assert.equal(everywhere.status, 200);
      assert.equal(everywhere.body.sessions_ended, 2);
      assert.equal((await server.call('GET', '/api/account', { headers: as(here) })).status, 401);
      assert.equal((await server.call('GET', '/api/account', { headers: as(third) })).status, 401);
    });

    it('resend verification mails a link that verifies the address', async () => {
      const user = await fresh();
      const browser = await signIn(server, user.email);
      const sent = await server.call('POST', '/api/auth/resend-verification', { headers: as(browser) });
      assert.equal(sent.status, 202);
      await new Promise((resolve) => setImmediate(resolve));
      const token = /verify-email\?token=(\S+)/.exec(server.mails.at(-1)?.text ?? '')?.[1] ?? '';
      const verified = await server.call('POST', '/api/auth/verify-email', { body: { token } });
      assert.equal(verified.status, 200);
      const account = await server.call('GET', '/api/account', { headers: as(browser) });
      assert.equal(account.body.email_verified, true);
      const again = await server.call('POST', '/api/auth/resend-verification', { headers: as(browser) });
      assert.equal(again.status, 409);
    });

    it('a suspended account cannot use its session; another account never sees this one', async () => {
      const user = await fresh();
      const other = await fresh();
      const browser = await signIn(server, user.email);
      const otherKey = (await server.call('GET', '/api/keys', { key: other.key })).body.data[0].id;
      const revoke = await server.call('DELETE', `/api/keys/${otherKey}`, { headers: as(browser) });
      assert.equal(revoke.status, 404);
      const suspend = await server.call('POST', `/api/admin/accounts/${user.accountId}/suspend`, {
        key: ADMIN_KEY,
      });
      assert.equal(suspend.status, 200);
      assert.equal((await server.call('GET', '/api/account', { headers: as(browser) })).status, 403);
    });
  });
}

describe('the session cookie on a site served over TLS', () => {
  it('is Secure and __Host- prefixed', async (t) => {
    const backend = BACKENDS.find((b) => b.name === 'sqlite');
    if (!backend) return t.skip('sqlite backend deselected');
    const opened = await backend.open();
    const server = await startTestServer({
      backend: opened,
      env: { PUBLIC_URL: 'https://tollgate.example' },
    });
    try {
      await server.register('tls@example.com');
      const response = await server.call('POST', '/api/auth/login', {
        headers: { origin: 'https://tollgate.example' },
        body: { email: 'tls@example.com', password: PASSWORD },
      });
      assert.equal(response.status, 200);
      const setCookie = response.headers.get('set-cookie') ?? '';
      assert.match(setCookie, /^__Host-tollgate_session=/);
      assert.match(setCookie, /Secure/);
      assert.match(setCookie, /HttpOnly/);
    } finally {
      await server.close();
      await opened.cleanup();
    }
  });
});
