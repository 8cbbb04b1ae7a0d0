import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ConfigError, parseConfig } from '../../src/config/load-config.ts';
import { BACKENDS, type OpenedBackend } from '../helpers/backends.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from '../helpers/server.ts';

const PASSWORD = 'correct horse battery';

describe('sign-in and sign-up throttles by client address', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let run = 0;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    server = await startTestServer({
      backend: opened,
      // One proxy in front: the client address is the X-Forwarded-For entry each request names.
      env: { TOLLGATE_TRUST_PROXY: '1' },
      extra: { sessionPolicy: { attemptsPerEmailPerMinute: 5, attemptsPerEmailAnywherePerMinute: 12 } },
    });
  });
  after(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  const from = (ip: string) => ({ 'x-forwarded-for': ip });
  const login = (email: string, password: string, ip: string) =>
    server.call('POST', '/api/auth/login', { body: { email, password }, headers: from(ip) });

  it('sign-in counts every address of one IPv6 /64 together', async () => {
    const net = `2001:db8:${++run}:1`;
    const statuses: number[] = [];
    for (let i = 1; i <= 21; i++) {
      const answer = await login(
        `nobody${i}-${Date.now()}@example.com`,
        'wrong password',
        `${net}::${i.toString(16)}`,
      );
      statuses.push(answer.status);
    }
    assert.deepEqual(statuses.slice(0, 20), Array<number>(20).fill(401));
    assert.equal(statuses[20], 429, 'the 21st attempt from the same /64 waits');
    const elsewhere = await login(
      `nobody-${Date.now()}@example.com`,
      'wrong password',
      `2001:db8:${run}:2::1`,
    );
    assert.equal(elsewhere.status, 401, 'the next /64 has its own count');
  });

  it('sign-up and verification count every address of one IPv6 /64 together', async () => {
    const net = `2001:db8:${++run}:1`;
    const statuses: number[] = [];
    for (let i = 1; i <= 20; i++) {
      const answer = await server.call('POST', '/api/auth/verify-email', {
        body: { token: `ev-not-a-token-${i}` },
        headers: from(`${net}:${i.toString(16)}::1`),
      });
      statuses.push(answer.status);
    }
    assert.deepEqual(statuses, Array<number>(20).fill(400));
    const signUp = await server.call('POST', '/api/auth/register', {
      body: { email: `newcomer-${Date.now()}@example.com`, password: PASSWORD },
      headers: from(`${net}:ffff:ffff:ffff:ffff`),
    });
    assert.equal(signUp.status, 429, JSON.stringify(signUp.body));
    assert.ok(Number(signUp.headers.get('retry-after')) >= 1);
  });

  it("wrong passwords from another address do not lock the owner out; the attacker's address is throttled", async () => {
    const email = `owner-${Date.now()}@example.com`;
    await server.register(email);
    const attacker: number[] = [];
    for (let i = 0; i < 8; i++)
      attacker.push((await login(email, 'not the password', '198.51.100.9')).status);
    assert.deepEqual(attacker, [401, 401, 401, 401, 401, 429, 429, 429]);
    const owner = await login(email, PASSWORD, '203.0.113.20');
    assert.equal(owner.status, 200, JSON.stringify(owner.body));
  });

  it('a crowd of addresses guessing one account is still bounded per account', async () => {
    const email = `crowded-${Date.now()}@example.com`;
    await server.register(email);
    const statuses: number[] = [];
    for (const host of [1, 2, 3])
      for (let i = 0; i < 5; i++) statuses.push((await login(email, 'guess', `192.0.2.${host}`)).status);
    // 12 a minute for the account from anywhere: the 13th guess waits, whoever sends it.
    assert.deepEqual(statuses.slice(0, 12), Array<number>(12).fill(401));
    assert.deepEqual(statuses.slice(12), [429, 429, 429]);
    assert.equal((await login(email, PASSWORD, '203.0.113.21')).status, 429);
  });
});

describe('failed key authentications are throttled per client address', () => {
  let opened: OpenedBackend;
  let server: TestServer;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    server = await startTestServer({ backend: opened, env: { TOLLGATE_TRUST_PROXY: '1' } });
  });
  after(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  const guess = (i: number) => `tg-guess-${i}-${'x'.repeat(32)}`;
  const chat = { model: 'model-b', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] };

  it('past 30 unknown keys a minute an address (an IPv6 /64) gets 429 with Retry-After, on /v1 and /api', async () => {
    const { key } = await server.register();
    const net = '2001:db8:aa:1';
    // Used once from the address before the guessing: a key in the cache is never refused.
    const before = await server.call('POST', '/v1/chat/completions', {
      key,
      body: chat,
      headers: { 'x-forwarded-for': `${net}::1` },
    });
    assert.equal(before.status, 200);
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const path = i % 2 === 0 ? '/v1/chat/completions' : '/api/account';
      const answer = await server.call(i % 2 === 0 ? 'POST' : 'GET', path, {
        key: guess(i),
        ...(i % 2 === 0 ? { body: chat } : {}),
        headers: { 'x-forwarded-for': `${net}::${(i + 2).toString(16)}` },
      });
      statuses.push(answer.status);
    }
    assert.deepEqual(statuses, Array<number>(30).fill(401));
    for (const [method, path] of [
      ['POST', '/v1/chat/completions'],
      ['GET', '/api/account'],
      ['POST', '/v1/chat/completions'],
    ] as const) {
      const refused = await server.call(method, path, {
        key: guess(99),
        ...(method === 'POST' ? { body: chat } : {}),
        headers: { 'x-forwarded-for': `${net}:ffff:ffff:ffff:ffff` },
      });
      assert.equal(refused.status, 429, `${method} ${path}: ${JSON.stringify(refused.body)}`);
      assert.equal(refused.body.error.type, 'rate_limit_error');
      assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    }
    // The admin key is never cached: it waits too, from that address.
    const admin = await server.call('GET', '/api/admin/accounts', {
      key: ADMIN_KEY,
      headers: { 'x-forwarded-for': `${net}::5` },
    });
    assert.equal(admin.status, 429);
    const cached = await server.call('POST', '/v1/chat/completions', {
      key,
      body: chat,
      headers: { 'x-forwarded-for': `${net}::1` },
    });
    assert.equal(cached.status, 200, 'the valid key in use is not refused');
    const elsewhere = await server.call('GET', '/api/account', {
      key: guess(100),
      headers: { 'x-forwarded-for': '2001:db8:aa:2::1' },
    });
    assert.equal(elsewhere.status, 401, 'another /64 is not blocked');
  });
});

describe('the admin key in production', () => {
  const production = {
    NODE_ENV: 'production',
    PUBLIC_URL: 'https://api.example',
    SMTP_URL: 'smtp://mail:25',
    TOLLGATE_TEST_PAYMENTS: 'true',
  };

  it('a short or low-entropy TOLLGATE_ADMIN_KEY stops the start, naming the variable', () => {
    for (const weak of ['admin', 'changeme-changeme-changeme-changeme', 'a'.repeat(48)])
      assert.throws(
        () => parseConfig({}, { ...production, TOLLGATE_ADMIN_KEY: weak }),
        (error: unknown) =>
          error instanceof ConfigError && /^TOLLGATE_ADMIN_KEY: too weak for production/.test(error.message),
        weak,
      );
  });

  it('a random key, no key (one is generated) and any key outside production are accepted', () => {
    assert.ok(
      parseConfig({}, { ...production, TOLLGATE_ADMIN_KEY: 'q8VmX2f0Zr7LkN4pT1sWb9YcH3uJ6eDa0gQxRtEiOy4=' }),
    );
    assert.ok(parseConfig({}, production));
    assert.ok(parseConfig({}, { TOLLGATE_ADMIN_KEY: 'admin' }));
  });
});
