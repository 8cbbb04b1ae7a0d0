import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { BACKENDS, type OpenedBackend } from '../helpers/backends.ts';
import { ADMIN_KEY, startTestServer, type Registered, type TestServer } from '../helpers/server.ts';

/** A pino logger whose lines the test can read. */
function capturingLogger(): { logger: pino.Logger; lines: () => any[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines: () => lines.map((line) => JSON.parse(line)) };
}

const ERROR_KEYS = ['code', 'message', 'type', 'param'];

for (const backend of BACKENDS) {
  describe(`text a store cannot keep (NUL, unpaired surrogates) is refused at the edge (${backend.name})`, async () => {
    const skip = await backend.unavailable();
    let opened: OpenedBackend;
    let server: TestServer;
    let user: Registered;
    const log = capturingLogger();

    before(async () => {
      if (skip) return;
      opened = await backend.open();
      server = await startTestServer({ backend: opened, extra: { logger: log.logger } });
      user = await server.register('text@example.com');
    });
    after(async () => {
      await server?.close();
      await opened?.cleanup();
    });

    const expectError = (
      answer: { status: number; body: any },
      status: number,
      param: string | null,
      what: string,
    ): void => {
      assert.equal(answer.status, status, `${what}: ${JSON.stringify(answer.body)}`);
      assert.deepEqual(Object.keys(answer.body), ['error'], what);
      assert.deepEqual(Object.keys(answer.body.error), ERROR_KEYS, what);
      assert.equal(answer.body.error.param, param, what);
      assert.doesNotMatch(answer.body.error.message, /\n\s+at /, `${what}: no stack in the answer`);
    };

    it('a NUL in a path identifier is a 404, on every route with one', { skip }, async () => {
      const key = { key: user.key };
      expectError(await server.call('GET', '/checkout/ord_%00'), 404, null, 'GET /checkout/ord_%00');
      expectError(
        await server.call('POST', '/checkout/ord_%00', { body: { outcome: 'success' } }),
        404,
        null,
        'POST /checkout/ord_%00',
      );
      expectError(
        await server.call('PATCH', '/api/keys/key_%00', { ...key, body: { name: 'x' } }),
        404,
        null,
        'PATCH /api/keys/key_%00',
      );
      expectError(await server.call('DELETE', '/api/keys/key_%00', key), 404, null, 'DELETE key');
      expectError(
        await server.call('POST', '/api/webhooks/deliveries/whd_%00/redeliver', key),
        404,
        null,
        'redeliver',
      );
      expectError(
        await server.call('GET', '/api/admin/accounts/acc_%00', { key: ADMIN_KEY }),
        404,
        null,
        'operator account',
      );
    });

    it(
      'a NUL or an unpaired surrogate in a body field or a query is a 400 naming the field',
      { skip },
      async () => {
        const key = { key: user.key };
        const cases: [method: string, path: string, body: unknown, param: string, auth: { key?: string }][] =
          [
            ['POST', '/api/auth/login', { email: 'text\u0000@example.com', password: 'x' }, 'email', {}],
            [
              'POST',
              '/api/auth/register',
              { email: 'a\u0000b@example.com', password: 'long enough' },
              'email',
              {},
            ],
            ['POST', '/api/auth/password-reset', { email: 'text@example.com\u0000' }, 'email', {}],
            ['POST', '/api/auth/verify-email', { token: 'tok_\u0000' }, 'token', {}],
            ['POST', '/api/keys', { name: 'ci\u0000key' }, 'name', key],
            [
              'POST',
              '/api/keys',
              { name: 'ci', allowed_models: ['model-b', 'model\u0000'] },
              'allowed_models[1]',
              key,
            ],
            ['POST', '/api/keys', { name: 'half \ud800 a pair' }, 'name', key],
            ['PATCH', `/api/keys/${user.keyId}`, { name: 'renamed\u0000' }, 'name', key],
            ['PUT', '/api/webhooks/endpoint', { url: 'https://example.com/\u0000' }, 'url', key],
            ['POST', '/api/billing/checkout', { plan: 'starter\u0000' }, 'plan', key],
            ['POST', '/checkout/ord_x', { outcome: 'success', 'reason\u0000': 'x' }, 'reason\u0000', {}],
            [
              'POST',
              '/api/admin/announcements',
              { title: 't\u0000', body: 'b' },
              'title',
              { key: ADMIN_KEY },
            ],
          ];
        for (const [method, path, body, param, auth] of cases)
          expectError(await server.call(method, path, { ...auth, body }), 400, param, `${method} ${path}`);
        expectError(
          await server.call('GET', '/api/admin/accounts?search=a%00b', { key: ADMIN_KEY }),
          400,
          'search',
          'search query',
        );
        // The same requests without the bad character are served.
        const fine = await server.call('POST', '/api/keys', { ...key, body: { name: 'ci key' } });
        assert.equal(fine.status, 201);
        const found = await server.call('GET', '/api/admin/accounts?search=text', { key: ADMIN_KEY });
        assert.equal(found.status, 200);
      },
    );

    it('none of it is logged as a server error', { skip }, () => {
      const errors = log.lines().filter((line) => line.level >= 50);
      assert.deepEqual(
        errors.map((line) => line.msg),
        [],
      );
    });
  });
}
