import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Db } from '../src/store/db.ts';
import { createPostgresDb } from '../src/store/postgres/postgres-db.ts';
import { BACKENDS, type OpenedBackend, POSTGRES_URL } from './helpers/backends.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.ts';

const postgres = BACKENDS.find((backend) => backend.name === 'postgres');
const skip = postgres ? await postgres.unavailable() : 'PostgreSQL is not in TOLLGATE_TEST_BACKENDS';

describe('a database outage and the rate limits', { skip: skip ?? false }, () => {
  let opened: OpenedBackend;
  let proxy: TcpProxy;
  let db: Db;
  let server: TestServer;

  before(async () => {
    opened = await postgres!.open();
    proxy = await startTcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
    const url = new URL(POSTGRES_URL);
    url.host = `127.0.0.1:${proxy.port}`;
    db = createPostgresDb({
      connectionString: url.toString(),
      schema: opened.schema!,
      connectionTimeoutMs: 500,
    });
    server = await startTestServer({ backend: { ...opened, db } });
  });
  after(async () => {
    await server?.close();
    await db?.close();
    await proxy?.close();
    await opened?.cleanup();
  });

  const chat = async (key: string): Promise<Response> => {
    const response = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'model-b', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
    });
    await response.text();
    return response;
  };

  it('requests refused for our own outage (503) give their rate-limit slot back', async () => {
    const { key, accountId } = await server.register();
    const grant = await server.call('POST', `/api/admin/accounts/${accountId}/credits`, {
      key: ADMIN_KEY,
      body: { amount_usd: 5 },
    });
    assert.ok(grant.status < 300);
    const plan = await server.call('PUT', `/api/admin/accounts/${accountId}/plan`, {
      key: ADMIN_KEY,
      body: { plan: 'starter' }, // 60 requests a minute
    });
    assert.ok(plan.status < 300);
    const warm = await chat(key); // caches the key: during the outage, the credit hold is what fails
    assert.equal(warm.status, 200);
    assert.equal(warm.headers.get('x-ratelimit-remaining-requests'), '59');

    await proxy.cut();
    for (let i = 0; i < 5; i++) assert.equal((await chat(key)).status, 503);
    await proxy.restore();

    let next: Response | undefined;
    for (let attempt = 0; attempt < 50 && next?.status !== 200; attempt++) {
      next = await chat(key);
      if (next.status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(next?.status, 200);
    // The warm request and this one count; the five refused for the outage do not.
    assert.equal(next.headers.get('x-ratelimit-remaining-requests'), '58');
  });
});
