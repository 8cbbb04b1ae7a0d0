import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Resolve } from '../../src/webhooks/url-guard.ts';
import { BACKENDS, type OpenedBackend } from '../helpers/backends.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const HOST = 'hooks.rebind.test';

/** DNS as the test plays it: what HOST resolves to right now. */
function fakeDns(): { resolve: Resolve; point(address: string): void } {
  let current = '93.184.215.14';
  return {
    resolve: async (host) => {
      if (host !== HOST)
        throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      return [{ address: current, family: current.includes(':') ? 6 : 4 }];
    },
    point: (address) => void (current = address),
  };
}

/** The account's delivery log once it has `count` entries. */
async function deliveries(server: TestServer, key: string, count: number): Promise<any[]> {
  for (let i = 0; i < 250; i++) {
    const data = (await server.call('GET', '/api/webhooks/deliveries', { key })).body.data as any[];
    if (data.length >= count) return data;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`fewer than ${count} deliveries were logged`);
}

describe('a webhook host re-pointed at an internal address after it was saved (DNS rebinding)', () => {
  let opened: OpenedBackend;
  let openedApart: OpenedBackend;
  let guarded: TestServer;
  let open: TestServer;
  let receiver: Receiver;
  const dns = fakeDns();

  before(async () => {
    opened = await BACKENDS[0]!.open();
    receiver = await startReceiver();
    const extra = { webhookRetryDelaysMs: [], webhookTimeoutMs: 2_000, webhookResolve: dns.resolve };
    guarded = await startTestServer({
      backend: opened,
      env: { TOLLGATE_WEBHOOK_ALLOW_PRIVATE: 'false', TOLLGATE_WEBHOOK_PORTS: 'any' },
      extra,
    });
    // A store of its own: two dispatchers over one outbox would take each other's events.
    openedApart = await BACKENDS[0]!.open();
    open = await startTestServer({ backend: openedApart, extra });
  });
  after(async () => {
    await guarded?.close();
    await open?.close();
    await receiver?.close();
    await opened?.cleanup();
    await openedApart?.cleanup();
  });

  it('is refused at delivery, not only when saved', async () => {
    const { key } = await guarded.register();
    dns.point('93.184.215.14');
    const saved = await guarded.call('PUT', '/api/webhooks/endpoint', {
      key,
      body: { url: `https://${HOST}/hook` },
    });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    for (const [i, inside] of ['127.0.0.1', '10.0.0.1', '169.254.169.254', '::ffff:7f00:1'].entries()) {
      dns.point(inside);
      assert.equal((await guarded.call('POST', '/api/webhooks/test', { key })).status, 202);
      const [latest] = await deliveries(guarded, key, i + 1);
      assert.equal(latest.status_code, null, inside);
      assert.match(latest.error, /resolves only to private addresses/, inside);
    }
  });

  it('never reaches a receiver on loopback, which the same lookup reaches where private targets are allowed', async () => {
    dns.point('127.0.0.1');
    const url = `http://${HOST}:${receiver.port}/hooks`;
    // Saved under the old rules, by the store itself: only the check at connection time stands in the way.
    const refused = await guarded.register();
    await guarded.services.store.webhooks.putEndpoint({
      accountId: refused.accountId,
      url,
      secret: 'whsec_rebinding',
      createdAt: Date.now(),
    });
    assert.equal((await guarded.call('POST', '/api/webhooks/test', { key: refused.key })).status, 202);
    const [attempt] = await deliveries(guarded, refused.key, 1);
    assert.match(attempt.error, /resolves only to private addresses/);
    assert.equal(receiver.deliveries.length, 0);
    // The control: the same name, the same lookup, private targets allowed: delivered to the receiver.
    const allowed = await open.register();
    assert.equal(
      (await open.call('PUT', '/api/webhooks/endpoint', { key: allowed.key, body: { url } })).status,
      200,
    );
    assert.equal((await open.call('POST', '/api/webhooks/test', { key: allowed.key })).status, 202);
    await receiver.waitFor(1);
    assert.equal(receiver.deliveries[0]!.headers.host, `${HOST}:${receiver.port}`);
  });

  it('an address written in a URL saved under older rules is judged again at delivery, never contacted', async () => {
    const before = receiver.deliveries.length;
    for (const host of ['127.0.0.1', '[::ffff:7f00:1]']) {
      const { key, accountId } = await guarded.register();
      await guarded.services.store.webhooks.putEndpoint({
        accountId,
        url: `http://${host}:${receiver.port}/hooks`,
        secret: 'whsec_literal',
        createdAt: Date.now(),
      });
      assert.equal((await guarded.call('POST', '/api/webhooks/test', { key })).status, 202);
      const [attempt] = await deliveries(guarded, key, 1);
      assert.equal(attempt.status_code, null, host);
      assert.match(attempt.error, /its address is not public/, host);
    }
    assert.equal(receiver.deliveries.length, before, 'the receiver heard nothing');
  });
});
