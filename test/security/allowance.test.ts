import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { canonicalMailbox } from '../../src/accounts/mailbox.ts';
import { ConfigError, parseConfig } from '../../src/config/load-config.ts';
import { createServices } from '../../src/composition/services.ts';
import { createStore } from '../../src/store/store.ts';
import { BACKENDS, type OpenedBackend } from '../helpers/backends.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from '../helpers/server.ts';

const chat = { model: 'model-b', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] };

for (const backend of BACKENDS) {
  const skip = await backend.unavailable();
  describe(`allowance multiplication on ${backend.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let server: TestServer;

    before(async () => {
      opened = await backend.open();
      server = await startTestServer({
        backend: opened,
        env: { TOLLGATE_KEY_CREATIONS_PER_MINUTE: '4', TOLLGATE_REQUIRE_VERIFIED_EMAIL: 'true' },
      });
    });
    after(async () => {
      await server?.close();
      await opened?.cleanup();
    });

    it('a trial account holds at most 3 active keys; revoking one makes room', async () => {
      const { key } = await server.register();
      const create = () => server.call('POST', '/api/keys', { key, body: { name: 'k' } });
      assert.equal((await create()).status, 201);
      const third = await create();
      assert.equal(third.status, 201);
      const fourth = await create();
      assert.equal(fourth.status, 403, JSON.stringify(fourth.body));
      assert.match(fourth.body.error.message, /3 active API keys/);
      assert.equal((await server.call('DELETE', `/api/keys/${third.body.id}`, { key })).status, 200);
      assert.equal((await create()).status, 201);
    });

    it('key creation is rate-limited per account, with Retry-After', async () => {
      const { key } = await server.registerOn('pro');
      const statuses: number[] = [];
      let last: Awaited<ReturnType<TestServer['call']>> | undefined;
      for (let i = 0; i < 6; i++) {
        last = await server.call('POST', '/api/keys', { key, body: { name: `k${i}` } });
        statuses.push(last.status);
      }
      assert.deepEqual(statuses, [201, 201, 201, 201, 429, 429]);
      assert.equal(last?.body.error.code, 'rate_limit_exceeded');
      assert.ok(Number(last?.headers.get('retry-after')) >= 1);
    });

    it('the trial credit needs a verified address when verification is required; verifying opens it at once', async () => {
      const { key } = await server.register();
      const refused = await server.call('POST', '/v1/chat/completions', { key, body: chat });
      assert.equal(refused.status, 402, JSON.stringify(refused.body));
      assert.match(refused.body.error.message, /verify your e-mail/);
      const account = await server.call('GET', '/api/account', { key });
      assert.equal(account.body.billing_status, 'email_unverified');
      const token = /Your verification token: (\S+)/.exec(server.mails.at(-1)!.text)![1];
      assert.equal((await server.call('POST', '/api/auth/verify-email', { body: { token } })).status, 200);
      const allowed = await server.call('POST', '/v1/chat/completions', { key, body: chat });
      assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
    });

    it('one trial per mailbox: plus-tags and Gmail dots do not make another mailbox', async () => {
      const tag = `${backend.name}${Date.now()}`;
      assert.ok(await server.register(`Bob.Smith${tag}+one@gmail.com`));
      for (const alias of [`bobsmith${tag}@googlemail.com`, `b.o.b.smith${tag}+two@gmail.com`]) {
        const again = await server.call('POST', '/api/auth/register', {
          body: { email: alias, password: 'correct horse battery' },
        });
        assert.equal(again.status, 409, alias);
        assert.match(again.body.error.message, /mailbox/);
      }
      assert.ok(await server.register(`carol${tag}+a@example.com`));
      const plus = await server.call('POST', '/api/auth/register', {
        body: { email: `carol${tag}@example.com`, password: 'correct horse battery' },
      });
      assert.equal(plus.status, 409);
      assert.ok(await server.register(`c.arol${tag}@example.com`), 'dots matter outside Gmail');
    });
  });
}

describe('rules for addresses, mail and payments in production', () => {
  it('canonical mailboxes', () => {
    assert.equal(canonicalMailbox(' Bob.Smith+x@GoogleMail.com '), 'bobsmith@gmail.com');
    assert.equal(canonicalMailbox('a.b+c+d@example.org'), 'a.b@example.org');
    assert.equal(canonicalMailbox('+only@example.org'), '+only@example.org');
  });

  it('verification is required by default exactly when mail can be delivered', () => {
    assert.equal(parseConfig({}, {}).security.requireVerifiedEmail, false);
    assert.equal(parseConfig({}, { SMTP_URL: 'smtp://mail:25' }).security.requireVerifiedEmail, true);
    assert.equal(
      parseConfig({}, { SMTP_URL: 'smtp://mail:25', TOLLGATE_REQUIRE_VERIFIED_EMAIL: 'false' }).security
        .requireVerifiedEmail,
      false,
    );
  });

  it('production refuses to start with the test payment provider, or without mail, unless enabled on purpose', () => {
    const base = { NODE_ENV: 'production', PUBLIC_URL: 'https://api.example', SMTP_URL: 'smtp://mail:25' };
    assert.throws(
      () => parseConfig({}, base),
      (error: unknown) => error instanceof ConfigError && /TOLLGATE_TEST_PAYMENTS=true/.test(error.message),
    );
    assert.ok(parseConfig({}, { ...base, TOLLGATE_TEST_PAYMENTS: 'true' }));
    assert.ok(parseConfig({}, { ...base, STRIPE_SECRET_KEY: 'sk', STRIPE_WEBHOOK_SECRET: 'whsec' }));
    const noMail = { NODE_ENV: 'production', PUBLIC_URL: 'https://api.example' };
    assert.throws(
      () => parseConfig({}, { ...noMail, TOLLGATE_TEST_PAYMENTS: 'true' }),
      (error: unknown) => error instanceof ConfigError && /TOLLGATE_ALLOW_NO_MAIL=true/.test(error.message),
    );
    assert.ok(parseConfig({}, { ...noMail, TOLLGATE_TEST_PAYMENTS: 'true', TOLLGATE_ALLOW_NO_MAIL: 'true' }));
    assert.equal(parseConfig({}, {}).security.production, false, 'development keeps the embedded defaults');
  });

  it('the test provider is announced loudly, and production never logs a verification token', async () => {
    const lines: any[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const opened = await BACKENDS[0]!.open();
    try {
      const config = parseConfig(
        {},
        {
          NODE_ENV: 'production',
          PUBLIC_URL: 'https://api.example',
          TOLLGATE_TEST_PAYMENTS: 'true',
          TOLLGATE_ALLOW_NO_MAIL: 'true',
          TOLLGATE_ADMIN_KEY: ADMIN_KEY,
        },
      );
      const services = createServices({
        config,
        store: createStore(opened.db),
        logger: pino({ level: 'info' }, sink),
      });
      const warning = lines.find((line) => /TEST PAYMENT PROVIDER IS ON/.test(line.msg));
      assert.equal(warning?.level, 40);
      await services.accounts.register('prod@example.com', 'correct horse battery');
      await new Promise((resolve) => setImmediate(resolve));
      const text = JSON.stringify(lines);
      assert.match(text, /e-mail NOT sent/);
      assert.doesNotMatch(text, /ev-[A-Za-z0-9_-]{10,}/, 'no verification token in the log');
      await services.close();
    } finally {
      await opened.cleanup();
    }
  });
});
