import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ConfigError, parseConfig } from '../../src/config/load-config.ts';
import { createClientAddress } from '../../src/http/client-address.ts';
import { BACKENDS, type OpenedBackend } from '../helpers/backends.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const chat = { model: 'model-b', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] };

describe('proxy trust: the client address is read from the right of X-Forwarded-For', () => {
  let opened: OpenedBackend;
  let server: TestServer;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    // One load balancer in front (here: the test client on 127.0.0.1 plays it).
    server = await startTestServer({ backend: opened, env: { TOLLGATE_TRUST_PROXY: '1' } });
  });
  after(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  it('a forged leftmost entry does not pass a 10.0.0.0/8 allow-list; the entry the proxy appended does', async () => {
    const { key } = await server.register();
    const created = await server.call('POST', '/api/keys', {
      key,
      body: { name: 'office', allowed_ips: ['10.0.0.0/8'] },
    });
    assert.equal(created.status, 201);
    const restricted = created.body.key as string;
    // The client wrote 10.1.2.3; the load balancer appended the address it saw, 198.51.100.7.
    const forged = { 'x-forwarded-for': '10.1.2.3, 198.51.100.7' };
    const refused = await server.call('POST', '/v1/chat/completions', {
      key: restricted,
      body: chat,
      headers: forged,
    });
    assert.equal(refused.status, 403, JSON.stringify(refused.body));
    assert.match(refused.body.error.message, /198\.51\.100\.7/);
    const api = await server.call('GET', '/api/account', { key: restricted, headers: forged });
    assert.equal(api.status, 403, 'the Fastify routes resolve the address the same way');

    const genuine = { 'x-forwarded-for': '10.1.2.3' };
    const allowed = await server.call('POST', '/v1/chat/completions', {
      key: restricted,
      body: chat,
      headers: genuine,
    });
    assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
    assert.equal(
      (await server.call('GET', '/api/account', { key: restricted, headers: genuine })).status,
      200,
    );
  });

  it('rotating the leftmost entry does not reset the per-address sign-up limit', async () => {
    const attempt = (n: number, client: string) =>
      server.call('POST', '/api/auth/verify-email', {
        body: { token: 'ev-not-a-token' },
        headers: { 'x-forwarded-for': `203.0.113.${n}, ${client}` },
      });
    const statuses: number[] = [];
    for (let n = 0; n < 25; n++) statuses.push((await attempt(n, '198.51.100.20')).status);
    assert.deepEqual(
      statuses,
      [...Array<number>(20).fill(400), ...Array<number>(5).fill(429)],
      'twenty attempts a minute from one real address, whatever it writes on the left',
    );
    const registering = await server.call('POST', '/api/auth/register', {
      body: { email: 'rotating@example.com', password: 'correct horse battery' },
      headers: { 'x-forwarded-for': '192.0.2.99, 198.51.100.20' },
    });
    assert.equal(registering.status, 429);
    // Another real client behind the same proxy is counted on its own.
    assert.equal((await attempt(0, '198.51.100.21')).status, 400);
  });
});

describe('proxy trust settings', () => {
  it('TOLLGATE_TRUST_PROXY=true is refused at start-up with what to set instead', () => {
    assert.throws(
      () => parseConfig({}, { TOLLGATE_TRUST_PROXY: 'true' }),
      (error: unknown) => error instanceof ConfigError && /hop count|number of proxies/.test(error.message),
    );
    assert.throws(() => parseConfig({}, { TOLLGATE_TRUST_PROXY: '10.0.0.0/33' }), ConfigError);
  });

  it('a list of trusted proxies skips each of them from the right, and stops at the first stranger', () => {
    const config = parseConfig({}, { TOLLGATE_TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' });
    const resolve = createClientAddress(config.trustProxy);
    assert.equal(resolve('127.0.0.1', '6.6.6.6, 203.0.113.9, 10.0.0.5'), '203.0.113.9');
    assert.equal(resolve('::ffff:127.0.0.1', '203.0.113.9'), '203.0.113.9');
    assert.equal(resolve('198.51.100.1', '10.1.2.3'), '198.51.100.1', 'an untrusted peer sets nothing');
    assert.equal(resolve('127.0.0.1', 'garbage, 10.0.0.5'), '10.0.0.5', 'a malformed entry ends the walk');
    const twoHops = createClientAddress(parseConfig({}, { TOLLGATE_TRUST_PROXY: '2' }).trustProxy);
    assert.equal(twoHops('127.0.0.1', '6.6.6.6, 203.0.113.9, 10.0.0.5'), '203.0.113.9');
    assert.equal(createClientAddress(false)('127.0.0.1', '10.1.2.3'), '127.0.0.1');
  });
});
