import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, type OpenedBackend } from '../helpers/backends.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from '../helpers/server.ts';

const chat = { model: 'model-b', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] };

for (const backend of BACKENDS) {
  const skip = await backend.unavailable();
  describe(`keys that manage and keys that call on ${backend.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let server: TestServer;

    before(async () => {
      opened = await backend.open();
      server = await startTestServer({ backend: opened, env: { TOLLGATE_KEY_CREATIONS_PER_MINUTE: '100' } });
    });
    after(async () => {
      await server?.close();
      await opened?.cleanup();
    });

    const activeKeys = async (key: string): Promise<number> => {
      const list = await server.call('GET', '/api/keys', { key });
      assert.equal(list.status, 200);
      return (list.body.data as { status: string }[]).filter((k) => k.status === 'active').length;
    };

    it('the plan key cap holds under parallel creates (trial: 3 active keys)', async () => {
      for (let round = 0; round < 3; round++) {
        const { key } = await server.register();
        const answers = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            server.call('POST', '/api/keys', { key, body: { name: `parallel-${i}` } }),
          ),
        );
        const statuses = answers.map((answer) => answer.status).sort();
        assert.deepEqual(statuses, [201, 201, 403, 403, 403, 403, 403, 403, 403, 403], `round ${round}`);
        assert.equal(await activeKeys(key), 3, `round ${round}`);
      }
    });

    it('the cap holds when parallel creates race a revoke', async () => {
      const { key } = await server.register();
      const second = await server.call('POST', '/api/keys', { key, body: { name: 'second' } });
      assert.equal(second.status, 201);
      await Promise.all([
        server.call('DELETE', `/api/keys/${second.body.id}`, { key }),
        ...Array.from({ length: 8 }, (_, i) =>
          server.call('POST', '/api/keys', { key, body: { name: `r${i}` } }),
        ),
      ]);
      assert.ok((await activeKeys(key)) <= 3);
    });

    const restrictions = [
      { limit_usd: 5, limit_period: 'daily' },
      { expires_at: '2099-01-01T00:00:00Z' },
      { allowed_models: ['model-b'] },
      { allowed_ips: ['127.0.0.1/32', '::1/128'] },
    ];

    it('a key with any restriction cannot create, change, rotate or revoke keys', async () => {
      for (const restriction of restrictions) {
        const { key } = await server.registerOn('pro');
        const made = await server.call('POST', '/api/keys', {
          key,
          body: { name: 'limited', ...restriction },
        });
        assert.equal(made.status, 201, JSON.stringify(made.body));
        const limited = made.body.key as string;
        const what = JSON.stringify(restriction);
        const attempts = [
          await server.call('POST', '/api/keys', { key: limited, body: { name: 'unlimited' } }),
          await server.call('PATCH', `/api/keys/${made.body.id}`, {
            key: limited,
            body: { limit_usd: null, expires_at: null, allowed_models: null, allowed_ips: null },
          }),
          await server.call('POST', `/api/keys/${made.body.id}/rotate`, { key: limited }),
          await server.call('DELETE', `/api/keys/${made.body.id}`, { key: limited }),
        ];
        for (const attempt of attempts) {
          assert.equal(attempt.status, 403, `${what}: ${JSON.stringify(attempt.body)}`);
          assert.equal(attempt.body.error.type, 'permission_error');
          assert.match(attempt.body.error.message, /restrictions/);
        }
        const own = await server.call('GET', '/api/keys', { key });
        const stored = (own.body.data as { id: string; status: string }[]).find((k) => k.id === made.body.id);
        assert.equal(stored?.status, 'active', `${what}: the key is unchanged`);
        assert.equal(await activeKeys(key), 2, `${what}: no key was made`);
      }
    });

    it('a restricted key cannot change the account: webhook endpoint and secret, billing, verification', async () => {
      const { key } = await server.registerOn('pro');
      const made = await server.call('POST', '/api/keys', { key, body: { name: 'ci', limit_usd: 5 } });
      const limited = made.body.key as string;
      assert.equal(
        (
          await server.call('PUT', '/api/webhooks/endpoint', {
            key,
            body: { url: 'http://127.0.0.1:9/hook' },
          })
        ).status,
        200,
      );
      const attempts = [
        ['PUT', '/api/webhooks/endpoint', { url: 'http://127.0.0.1:9/other' }],
        ['GET', '/api/webhooks/endpoint', undefined],
        ['POST', '/api/webhooks/endpoint/rotate-secret', undefined],
        ['DELETE', '/api/webhooks/endpoint', undefined],
        ['POST', '/api/webhooks/test', undefined],
        ['POST', '/api/billing/checkout', { topup_usd: 10 }],
        ['POST', '/api/auth/resend-verification', undefined],
      ] as const;
      for (const [method, path, body] of attempts) {
        const answer = await server.call(method, path, { key: limited, ...(body ? { body } : {}) });
        assert.equal(answer.status, 403, `${method} ${path}: ${JSON.stringify(answer.body)}`);
        assert.equal(answer.body.error.type, 'permission_error');
      }
    });

    it('a restricted key still calls models and reads its account; an unrestricted key and the admin key manage', async () => {
      const { key, accountId } = await server.registerOn('pro');
      const made = await server.call('POST', '/api/keys', { key, body: { name: 'ci', limit_usd: 5 } });
      const limited = made.body.key as string;
      for (const path of [
        '/api/account',
        '/api/key',
        '/api/keys',
        '/api/usage',
        '/api/webhooks/deliveries',
      ]) {
        const answer = await server.call('GET', path, { key: limited });
        assert.equal(answer.status, 200, `${path}: ${JSON.stringify(answer.body)}`);
      }
      assert.equal(
        (await server.call('POST', '/v1/chat/completions', { key: limited, body: chat })).status,
        200,
      );
      // The unrestricted key lifts the limit of the restricted one; the operator can still revoke it.
      const lifted = await server.call('PATCH', `/api/keys/${made.body.id}`, {
        key,
        body: { limit_usd: null },
      });
      assert.equal(lifted.status, 200, JSON.stringify(lifted.body));
      assert.equal(
        (await server.call('POST', '/api/keys', { key: limited, body: { name: 'now allowed' } })).status,
        201,
        'without restrictions the key manages again',
      );
      const keys = await server.call('GET', `/api/admin/accounts/${accountId}/keys`, { key: ADMIN_KEY });
      assert.equal(keys.status, 200);
    });

    it('revoking and re-creating a key does not reset the rate windows (trial: 10 requests a minute per key)', async () => {
      const { key, keyId } = await server.register();
      const call = (secret: string) =>
        server.call('POST', '/v1/chat/completions', { key: secret, body: chat });
      const burst = async (secret: string, n: number): Promise<number[]> => {
        const statuses: number[] = [];
        for (let i = 0; i < n; i++) statuses.push((await call(secret)).status);
        return statuses;
      };
      assert.deepEqual(await burst(key, 11), [...Array<number>(10).fill(200), 429]);
      // A second active key has windows of its own: limits are per key.
      const second = await server.call('POST', '/api/keys', { key, body: { name: 'second' } });
      assert.equal(
        (await call(second.body.key)).status,
        200,
        'a new key beside the first has its own windows',
      );
      // A key made in place of a revoked one takes over its windows.
      assert.equal((await server.call('DELETE', `/api/keys/${keyId}`, { key: second.body.key })).status, 200);
      for (let round = 0; round < 3; round++) {
        const made = await server.call('POST', '/api/keys', {
          key: second.body.key,
          body: { name: `again-${round}` },
        });
        assert.equal(made.status, 201, JSON.stringify(made.body));
        const refused = await call(made.body.key);
        assert.equal(refused.status, 429, `round ${round}: ${JSON.stringify(refused.body)}`);
        assert.ok(Number(refused.headers.get('retry-after')) >= 1);
        assert.equal(
          (await server.call('DELETE', `/api/keys/${made.body.id}`, { key: second.body.key })).status,
          200,
        );
      }
    });

    it("count_tokens keeps the key's allowed models and IP list, and has a per-minute window of its own", async () => {
      const { key } = await server.registerOn('pro');
      const count = (secret: string, model: string) =>
        server.call('POST', '/v1/messages/count_tokens', {
          key: secret,
          body: { model, messages: [{ role: 'user', content: 'hi' }] },
        });
      const onlyB = await server.call('POST', '/api/keys', {
        key,
        body: { name: 'b', allowed_models: ['model-b'] },
      });
      assert.equal((await count(onlyB.body.key, 'model-b')).status, 200);
      const refused = await count(onlyB.body.key, 'model-a');
      assert.equal(refused.status, 403, JSON.stringify(refused.body));
      assert.match(JSON.stringify(refused.body), /may not use model model-a/);
      const elsewhere = await server.call('POST', '/api/keys', {
        key,
        body: { name: 'ip', allowed_ips: ['10.0.0.0/8'] },
      });
      assert.equal((await count(elsewhere.body.key, 'model-b')).status, 403);

      const trial = await server.register();
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++) statuses.push((await count(trial.key, 'model-b')).status);
      assert.deepEqual(statuses, [...Array<number>(10).fill(200), 429]);
      const chatAfter = await server.call('POST', '/v1/chat/completions', { key: trial.key, body: chat });
      assert.equal(chatAfter.status, 200, 'counting does not use up the calls');
    });
  });
}
