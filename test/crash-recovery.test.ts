import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createSqliteDb } from '../src/store/sqlite/sqlite-db.ts';
import { startGatewayProcess } from './helpers/process.ts';
import { startReceiver } from './helpers/receiver.ts';

const ADMIN = 'tg-admin-crash-test-0123456789abcdef';

describe('a gateway process killed mid-load', () => {
  let dir: string;
  let env: Record<string, string>;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-crash-'));
    const config = join(dir, 'tollgate.yaml');
    writeFileSync(config, 'simulator:\n  chunk_interval_ms: 25\n');
    env = {
      DATABASE_URL: `sqlite:${join(dir, 'tollgate.db')}`,
      TOLLGATE_ADMIN_KEY: ADMIN,
      TOLLGATE_CONFIG: config,
      TOLLGATE_WEBHOOK_ALLOW_PRIVATE: 'true',
    };
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** Registers an account on a running gateway; resolves to the register answer. */
  const register = async (url: string, email: string): Promise<any> =>
    (
      await fetch(`${url}/api/auth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: 'correct horse battery' }),
      })
    ).json();

  const post = (url: string, path: string, key: string, body: unknown) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('loses no settled charge, and no hold of its requests outlives it', async () => {
    const first = await startGatewayProcess(env);
    const registered = await register(first.url, 'crash@example.com');
    const key: string = registered.api_key.key;
    const accountId: string = registered.account.id;
    await fetch(`${first.url}/api/admin/accounts/${accountId}/plan`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: '{"plan":"enterprise"}',
    });
    await post(first.url, `/api/admin/accounts/${accountId}/credits`, ADMIN, { amount_usd: 50 });

    const settled = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        post(first.url, '/v1/chat/completions', key, {
          model: 'model-a',
          messages: [{ role: 'user', content: `wave one ${i}` }],
        }),
      ),
    );
    assert.ok(settled.every((r) => r.status === 200));
    const settledIds = settled.map((r) => r.headers.get('x-request-id')!);
    await new Promise((resolve) => setTimeout(resolve, 200));

    // A second wave of slow streams is in flight, holding credit, when the process dies.
    const inFlight = Array.from({ length: 30 }, (_, i) =>
      post(first.url, '/v1/chat/completions', key, {
        model: 'model-a',
        stream: true,
        messages: [{ role: 'user', content: `wave two ${i}` }],
      })
        .then((r) => r.text())
        .catch(() => 'cut'),
    );
    await new Promise((resolve) => setTimeout(resolve, 150));
    const during = (await (
      await fetch(`${first.url}/api/account`, { headers: { authorization: `Bearer ${key}` } })
    ).json()) as any;
    assert.ok(during.held_usd > 0, 'the streams in flight hold credit');
    first.child.kill('SIGKILL');
    assert.equal(await first.exited, 'SIGKILL');
    await Promise.all(inFlight);

    const second = await startGatewayProcess(env);
    try {
      const check = createSqliteDb(join(dir, 'tollgate.db'));
      const holds = await check.get<{ n: number }>('SELECT COUNT(*) AS n FROM holds');
      assert.equal(Number(holds?.n), 0, 'no hold is left in the database');
      const account = await check.get<{ held_micros: number }>(
        'SELECT held_micros FROM accounts WHERE id = $1',
        [accountId],
      );
      assert.equal(account?.held_micros, 0);
      for (const id of settledIds) {
        const record = await check.get<{ status: string; cost_micros: number }>(
          'SELECT status, cost_micros FROM usage_records WHERE request_id = $1',
          [id],
        );
        assert.equal(record?.status, 'ok', `settled request ${id} survived`);
        assert.ok(record.cost_micros > 0);
      }
      const granted = await check.get<{ s: number }>(
        'SELECT CAST(SUM(amount_micros) AS BIGINT) AS s FROM credit_grants WHERE account_id = $1',
        [accountId],
      );
      const remaining = await check.get<{ s: number }>(
        'SELECT CAST(SUM(remaining_micros) AS BIGINT) AS s FROM credit_grants WHERE account_id = $1',
        [accountId],
      );
      const charged = await check.get<{ s: number }>(
        'SELECT CAST(SUM(cost_micros - uncollected_micros) AS BIGINT) AS s FROM usage_records WHERE account_id = $1',
        [accountId],
      );
      assert.equal(
        Number(granted?.s) - Number(charged?.s),
        Number(remaining?.s),
        'the ledger balances after the crash',
      );
      await check.close();
      const balance = (await (
        await fetch(`${second.url}/api/account`, { headers: { authorization: `Bearer ${key}` } })
      ).json()) as any;
      assert.equal(balance.held_usd, 0, 'nothing is held after the restart');
      assert.equal(balance.available_usd, balance.balance_usd);
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  });

  it('SIGTERM drains a stream in flight, settles it, then exits 0', async () => {
    const gateway = await startGatewayProcess(env);
    const registered = await register(gateway.url, 'drain@example.com');
    const response = await post(gateway.url, '/v1/chat/completions', registered.api_key.key, {
      model: 'model-b',
      stream: true,
      messages: [{ role: 'user', content: 'drain' }],
    });
    const requestId = response.headers.get('x-request-id');
    const text = response.text();
    await new Promise((resolve) => setTimeout(resolve, 100));
    gateway.child.kill('SIGTERM');
    assert.match(await text, /data: \[DONE\]/, 'the stream finished despite the stop');
    assert.equal(await gateway.exited, 0);
    const db = createSqliteDb(join(dir, 'tollgate.db'));
    const record = await db.get<{ status: string }>(
      'SELECT status FROM usage_records WHERE request_id = $1',
      [requestId],
    );
    assert.equal(record?.status, 'ok', 'its settlement was flushed before exit');
    await db.close();
  });

  it('a payment event queued before a crash is delivered after the restart', async () => {
    // The receiver is down while the order is paid: the first attempt fails and the event waits in the outbox.
    const parked = await startReceiver();
    const port = parked.port;
    await parked.close();
    const gateway = await startGatewayProcess(env);
    const db = createSqliteDb(join(dir, 'tollgate.db'));
    let checkout: any;
    let accountId = '';
    try {
      const registered = await register(gateway.url, 'outbox@example.com');
      const key: string = registered.api_key.key;
      accountId = registered.account.id;
      const endpoint = await fetch(`${gateway.url}/api/webhooks/endpoint`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `http://127.0.0.1:${port}/hooks` }),
      });
      assert.equal(endpoint.status, 200);
      checkout = await (await post(gateway.url, '/api/billing/checkout', key, { plan: 'starter' })).json();
      const paid = await fetch(checkout.checkout_url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"outcome":"success"}',
      });
      assert.equal(paid.status, 200);
      // The crash comes after the failed attempt is recorded: the event is pending, its retry ~10 s away.
      const failed = await waitFor(() =>
        db.get<{ n: number }>(
          `SELECT COUNT(*) AS n FROM webhook_events WHERE account_id = $1 AND status = 'pending' AND attempts = 1`,
          [accountId],
        ),
      );
      assert.equal(Number(failed.n), 1);
    } finally {
      gateway.child.kill('SIGKILL');
      await gateway.exited;
    }

    // The retry delay (10 s ± 20%, not configurable per process) passes while the gateway is down: the test moves
    // the event's due time to now instead of sleeping through it.
    await db.run(
      `UPDATE webhook_events SET next_attempt_at = $1 WHERE account_id = $2 AND status = 'pending'`,
      [Date.now(), accountId],
    );
    const queued = await db.get<{ id: string }>('SELECT id FROM webhook_events WHERE account_id = $1', [
      accountId,
    ]);
    await db.close();
    const receiver = await startReceiver(port);
    const restarted = await startGatewayProcess(env);
    try {
      const [delivery] = await receiver.waitFor(1, 10_000);
      const event = JSON.parse(delivery!.body);
      assert.equal(event.event_type, 'payment.success');
      assert.equal(event.order_id, checkout.order_id);
      assert.equal(delivery!.headers['x-service-event-id'], queued?.id, 'the event queued before the crash');
    } finally {
      restarted.child.kill('SIGTERM');
      await restarted.exited;
      await receiver.close();
    }
  });
});

/** Polls `read` every 20 ms until it gives a row with a non-zero `n` (within 10 s); resolves to that row. */
async function waitFor(read: () => Promise<{ n: number } | undefined>): Promise<{ n: number }> {
  for (const started = Date.now(); Date.now() - started < 10_000;) {
    const row = await read();
    if (row && Number(row.n) > 0) return row;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('condition not met in 10 s');
}
