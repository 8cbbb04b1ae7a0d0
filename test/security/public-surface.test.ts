import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { ConfigError, parseConfig } from '../../src/config/load-config.ts';
import { createMetricsServer, listenMetrics } from '../../src/observability/metrics-server.ts';
import { BACKENDS, type OpenedBackend } from '../helpers/backends.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from '../helpers/server.ts';

const METRICS_TOKEN = 'metrics-token-0123456789abcdefghij';

describe('what the public port shows, links and the test checkout', () => {
  let opened: OpenedBackend;
  let server: TestServer;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    server = await startTestServer({ backend: opened, env: { TOLLGATE_METRICS_TOKEN: METRICS_TOKEN } });
  });
  after(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  it('/health tells anyone the status only; deployments and upstream models need the admin key', async () => {
    const { key } = await server.register();
    for (const caller of [undefined, key]) {
      const open = await server.call('GET', '/health', caller ? { key: caller } : {});
      assert.equal(open.status, 200);
      assert.deepEqual(open.body, { status: 'ok' });
    }
    // A key that is sent must be valid, as everywhere (docs/decisions.md): a wrong one is 401, not the status.
    const wrong = await server.call('GET', '/health', { key: 'tg-not-a-real-key-000000000000000000000000' });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error.code, 'unauthorized');
    const full = await server.call('GET', '/health', { key: ADMIN_KEY });
    assert.equal(full.body.status, 'ok');
    assert.ok(Array.isArray(full.body.deployments) && full.body.deployments.length > 0);
    assert.equal(typeof full.body.database.dialect, 'string');
  });

  it('/metrics is refused to anonymous callers and user keys; the metrics token or the admin key opens it', async () => {
    const { key } = await server.register();
    const anonymous = await server.call('GET', '/metrics');
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.error.code, 'unauthorized');
    assert.equal((await server.call('GET', '/metrics', { key })).status, 401);
    assert.equal((await server.call('GET', '/metrics', { key: `${METRICS_TOKEN}x` })).status, 401);
    const byToken = await server.call('GET', '/metrics', { key: METRICS_TOKEN });
    assert.equal(byToken.status, 200);
    assert.match(byToken.body, /process_cpu_user_seconds_total/);
    assert.equal((await server.call('GET', '/metrics', { key: ADMIN_KEY })).status, 200);
  });

  it('checkout links never come from the request: Host and X-Forwarded-Proto are ignored', async () => {
    const { key } = await server.register();
    // fetch() will not send another Host, so this request is written with node:http.
    const checkout = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const body = JSON.stringify({ topup_usd: 5 });
      const sent = request(`${server.url}/api/billing/checkout`, {
        method: 'POST',
        headers: {
          host: 'evil.example',
          'x-forwarded-proto': 'javascript',
          'x-forwarded-host': 'evil.example',
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      });
      sent.on('error', reject);
      sent.on('response', (response) => {
        let text = '';
        response.on('data', (piece: Buffer) => (text += piece.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
      });
      sent.end(body);
    });
    assert.equal(checkout.status, 201);
    assert.equal(checkout.body.checkout_url, `${server.url}/checkout/${checkout.body.order_id}`);
  });

  it('the checkout page sends CSP, frame, sniffing and referrer headers, and runs only its own script', async () => {
    const { key } = await server.register();
    const checkout = await server.call('POST', '/api/billing/checkout', { key, body: { topup_usd: 5 } });
    const page = await fetch(checkout.body.checkout_url);
    assert.equal(page.status, 200);
    const csp = page.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.equal(page.headers.get('x-frame-options'), 'DENY');
    assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
    const html = await page.text();
    assert.ok(nonce && html.includes(`<script nonce="${nonce}">`));
    assert.doesNotMatch(html, /onclick=/, 'no inline handlers, which the policy would block');
  });

  it('a suspended account cannot complete its pending test checkout', async () => {
    const { key, accountId } = await server.register();
    const checkout = await server.call('POST', '/api/billing/checkout', { key, body: { plan: 'pro' } });
    assert.equal(checkout.status, 201);
    assert.equal(
      (await server.call('POST', `/api/admin/accounts/${accountId}/suspend`, { key: ADMIN_KEY })).status,
      200,
    );
    const paid = await fetch(checkout.body.checkout_url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ outcome: 'success' }),
    });
    assert.equal(paid.status, 403);
    const order = await server.services.store.payments.order(checkout.body.order_id);
    assert.equal(order?.status, 'pending');
    const account = await server.call('GET', `/api/admin/accounts/${accountId}`, { key: ADMIN_KEY });
    assert.equal(account.body.plan, 'free_trial');
  });

  it('the first revoke answers the time the key was revoked', async () => {
    const { key } = await server.register();
    const created = await server.call('POST', '/api/keys', { key, body: { name: 'spare' } });
    const first = await server.call('DELETE', `/api/keys/${created.body.id}`, { key });
    assert.equal(first.status, 200);
    assert.equal(first.body.status, 'revoked');
    assert.match(first.body.revoked_at ?? '', /^\d{4}-\d\d-\d\dT/);
    const second = await server.call('DELETE', `/api/keys/${created.body.id}`, { key });
    assert.equal(second.body.revoked_at, first.body.revoked_at);
  });
});

describe('production settings and the metrics listener', () => {
  it('production needs PUBLIC_URL', () => {
    assert.throws(
      () =>
        parseConfig(
          {},
          { NODE_ENV: 'production', SMTP_URL: 'smtp://mail:25', TOLLGATE_TEST_PAYMENTS: 'true' },
        ),
      /PUBLIC_URL/,
    );
  });

  it('a separate metrics address serves /metrics alone, without a token', async () => {
    const config = parseConfig({}, { TOLLGATE_METRICS_ADDRESS: '127.0.0.1:0' });
    assert.deepEqual(config.security.metricsAddress, { host: '127.0.0.1', port: 0 });
    assert.throws(() => parseConfig({}, { TOLLGATE_METRICS_ADDRESS: 'nope' }), ConfigError);
    const { Metrics } = await import('../../src/observability/metrics.ts');
    const server = createMetricsServer(new Metrics(), pino({ level: 'silent' }));
    await listenMetrics(server, '127.0.0.1', 0);
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const metrics = await fetch(`${base}/metrics`);
      assert.equal(metrics.status, 200);
      assert.match(await metrics.text(), /tollgate_chat_requests_total/);
      assert.equal((await fetch(`${base}/health`)).status, 404);
    } finally {
      server.close();
    }
  });
});
