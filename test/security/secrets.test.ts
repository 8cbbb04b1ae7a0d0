import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../src/observability/create-logger.ts';
import { ProviderError } from '../../src/providers/provider.ts';
import { GatewayError } from '../../src/core/gateway-error.ts';
import { createSecretBox } from '../../src/shared/secret-box.ts';
import { migrate } from '../../src/store/migrate.ts';
import { createStore, openDb } from '../../src/store/store.ts';
import { BACKENDS, type OpenedBackend } from '../helpers/backends.ts';
import { startFakeOpenAI } from '../../src/providers/openai/fake-openai.ts';
import type { FakeUpstream } from '../../src/providers/fake-upstream.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const UPSTREAM_KEY = 'sk-proj-upstreamSecretValue0123456789';
const KEY_A = 'first-secret-key-of-at-least-32-characters';
const KEY_B = 'second-secret-key-of-at-least-32-characters';

describe('secrets at rest', () => {
  it('the SQLite file, its -wal and -shm and a new data directory are readable by the owner only', async () => {
    const root = mkdtempSync(join(tmpdir(), 'tollgate-perm-'));
    try {
      const path = join(root, 'data', 'tollgate.db');
      const db = openDb(`sqlite:${path}`);
      await migrate(db);
      await db.run("INSERT INTO settings (name, value) VALUES ('x', 'y')");
      assert.equal(statSync(join(root, 'data')).mode & 0o777, 0o700);
      for (const file of [path, `${path}-wal`, `${path}-shm`])
        assert.equal(statSync(file).mode & 0o777, 0o600, file);
      await db.close();

      const old = join(root, 'old.db');
      writeFileSync(old, '');
      chmodSync(old, 0o644);
      const reopened = openDb(`sqlite:${old}`);
      assert.equal(statSync(old).mode & 0o777, 0o600, 'an existing world-readable file is narrowed');
      await reopened.close();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  for (const backend of BACKENDS) {
    describe(`webhook signing secrets on ${backend.name}`, async () => {
      const skip = await backend.unavailable();
      let opened: OpenedBackend;
      before(async () => {
        if (!skip) opened = await backend.open();
      });
      after(async () => opened?.cleanup());

      it(
        'are encrypted with TOLLGATE_SECRET_KEY, plaintext rows keep working, and a rotation re-seals',
        { skip: skip ?? false },
        async () => {
          const plain = createStore(opened.db);
          const sealedA = createStore(opened.db, {
            secrets: createSecretBox({ current: KEY_A, previous: [] }),
          });
          const { account } = await registerAccount(plain);
          await plain.webhooks.putEndpoint({
            accountId: account,
            url: 'https://a.example/h',
            secret: 'whsec_plainOld',
            createdAt: 1,
          });
          assert.equal(
            (await sealedA.webhooks.endpoint(account))?.secret,
            'whsec_plainOld',
            'a plaintext row still reads',
          );

          await sealedA.webhooks.putEndpoint({
            accountId: account,
            url: 'https://a.example/h',
            secret: 'whsec_new123',
            createdAt: 1,
          });
          const raw = await opened.db.get<{ secret: string }>(
            'SELECT secret FROM webhook_endpoints WHERE account_id = $1',
            [account],
          );
          assert.match(raw!.secret, /^enc:v1:/);
          assert.ok(!raw!.secret.includes('whsec_new123'));
          assert.equal((await sealedA.webhooks.endpoint(account))?.secret, 'whsec_new123');
          await assert.rejects(
            plain.webhooks.endpoint(account),
            /TOLLGATE_SECRET_KEY/,
            'never handed out sealed',
          );

          // Rotation: B is current, A still opens; a start-up re-seals every row under B; then A can go.
          const rotated = createStore(opened.db, {
            secrets: createSecretBox({ current: KEY_B, previous: [KEY_A] }),
          });
          assert.equal((await rotated.webhooks.endpoint(account))?.secret, 'whsec_new123');
          assert.ok((await rotated.webhooks.resealSecrets()) >= 1);
          const onlyB = createStore(opened.db, {
            secrets: createSecretBox({ current: KEY_B, previous: [] }),
          });
          assert.equal((await onlyB.webhooks.endpoint(account))?.secret, 'whsec_new123');
          await assert.rejects(sealedA.webhooks.endpoint(account), /not configured/);
        },
      );
    });
  }
});

async function registerAccount(store: ReturnType<typeof createStore>): Promise<{ account: string }> {
  const id = `acct_sec_${Math.random().toString(36).slice(2)}`;
  await store.db.run(
    `INSERT INTO accounts (id, email, password_hash, plan, created_at) VALUES ($1, $2, 'x', 'free_trial', 1)`,
    [id, `${id}@example.com`],
  );
  return { account: id };
}

describe('upstream error text and logs', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let upstream: FakeUpstream;
  let key: string;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    upstream = await startFakeOpenAI();
    server = await startTestServer({
      backend: opened,
      env: { UPSTREAM_KEY },
      yaml: {
        providers: [{ id: 'up', type: 'openai', base_url: upstream.url, api_key_env: 'UPSTREAM_KEY' }],
        models: { 'model-b': { deployments: [{ provider: 'up', model: 'secret-upstream-model-7b' }] } },
      },
    });
    const registered = await server.registerOn('pro');
    key = registered.key;
  });
  after(async () => {
    await server?.close();
    await upstream?.close();
    await opened?.cleanup();
  });

  it('an upstream 400 that echoes our headers reaches the client without the key, the upstream model or its URL', async () => {
    upstream.script({
      kind: 'status',
      status: 400,
      message: `Invalid value for 'temperature' on model Secret-Upstream-Model-7B. Request headers: {"Authorization": "Bearer ${UPSTREAM_KEY}", "x-api-key": "${UPSTREAM_KEY}"} see ${upstream.url}/docs`,
    });
    const response = await server.call('POST', '/v1/chat/completions', {
      key,
      body: { model: 'model-b', messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(response.status, 400);
    const message: string = response.body.error.message;
    assert.match(
      message,
      /^the model rejected the request: Invalid value for 'temperature' on model model-b/,
    );
    assert.ok(!message.includes(UPSTREAM_KEY), message);
    assert.ok(!message.includes('upstreamSecret'), message);
    assert.ok(!/secret-upstream-model/i.test(message), message);
    assert.ok(!message.includes(upstream.url), message);
    assert.ok(!/x-api-key|authorization/i.test(message), 'no header names either');
  });

  it('the logger scrubs keys from error messages, causes and credential fields', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = createLogger('info', sink);
    const cause = new ProviderError('status', `upstream said: Authorization: Bearer ${UPSTREAM_KEY}`, {
      status: 500,
    });
    logger.error(
      { err: new GatewayError('provider_error', 'model-b is unavailable', { cause }) },
      'request failed',
    );
    logger.warn({ headers: { authorization: `Bearer ${UPSTREAM_KEY}` }, password: 'hunter2hunter2' }, 'odd');
    logger.error({ err: new Error(`connect to postgres://tollgate:dbpassw0rd@db:5432/x failed`) }, 'db');
    const text = lines.join('');
    assert.ok(text.includes('upstream said'), 'the message itself is kept');
    assert.ok(!text.includes('upstreamSecretValue'), text);
    assert.ok(!text.includes('hunter2'), text);
    assert.ok(!text.includes('dbpassw0rd'), text);
  });
});
