import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { costMicros } from '../src/billing/pricing.ts';
import { countPromptTokens } from '../src/core/count-tokens.ts';
import { MODEL_CATALOG } from '../src/config/defaults.ts';
import { utcDay } from '../src/store/ledger-repo.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { createTestClock } from './helpers/clock.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';

const DAY = 86_400_000;

describe('the cost formula', () => {
  it('charges ceil(prompt × input + completion × output) in micro-USD', () => {
    const model = (id: string) => MODEL_CATALOG.find((m) => m.id === id)!;
    assert.equal(costMicros(model('model-a'), 1000, 500), 12_500);
    assert.equal(costMicros(model('model-a'), 1, 0), 4, '3.5 µUSD rounds up to 4');
    assert.equal(costMicros(model('model-a'), 0, 1), 18);
    assert.equal(costMicros(model('model-b'), 7, 0), 1, '0.91 µUSD rounds up to 1');
    assert.equal(costMicros(model('model-b'), 1_000_000, 0), 130_000);
    assert.equal(costMicros(model('model-c'), 500_000, 500_000), 300_000);
    assert.equal(costMicros(model('model-d'), 10, 10), 16);
    assert.equal(costMicros(model('model-e'), 3, 7), 1);
    assert.equal(costMicros(model('model-f'), 100, 0), 15);
    assert.equal(costMicros(model('model-b'), 0, 0), 0);
  });
});

for (const backend of BACKENDS) {
  const skip = await backend.unavailable();
  describe(`billing on ${backend.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let server: TestServer;
    const time = createTestClock(Date.parse('2026-11-02T08:00:00Z'));

    before(async () => {
      opened = await backend.open();
      server = await startTestServer({
        backend: opened,
        clock: time.clock,
        yaml: { simulator: { chunk_interval_ms: 0 } },
      });
    });
    after(async () => {
      await server?.close();
      await opened?.cleanup();
    });

    const chat = (key: string, body: Record<string, unknown>) =>
      server.call('POST', '/v1/chat/completions', { key, body });
    const balanceOf = async (key: string): Promise<number> => {
      await server.services.settlements.flush();
      return Math.round((await server.call('GET', '/api/account', { key })).body.balance_usd * 1e6);
    };
    const enterprise = async () => {
      const registered = await server.registerOn('enterprise');
      return registered;
    };
    const ledgerBalances = async (accountId: string): Promise<void> => {
      const granted = await opened.db.get<{ s: number }>(
        'SELECT CAST(SUM(amount_micros) AS BIGINT) AS s FROM credit_grants WHERE account_id = $1',
        [accountId],
      );
      const remaining = await opened.db.get<{ s: number }>(
        'SELECT CAST(SUM(remaining_micros) AS BIGINT) AS s FROM credit_grants WHERE account_id = $1',
        [accountId],
      );
      const charged = await opened.db.get<{ s: number | null }>(
        'SELECT CAST(SUM(cost_micros - uncollected_micros) AS BIGINT) AS s FROM usage_records WHERE account_id = $1',
        [accountId],
      );
      const account = await opened.db.get<{ held_micros: number }>(
        'SELECT held_micros FROM accounts WHERE id = $1',
        [accountId],
      );
      const holds = await opened.db.get<{ s: number | null }>(
        'SELECT CAST(SUM(amount_micros) AS BIGINT) AS s FROM holds WHERE account_id = $1',
        [accountId],
      );
      assert.equal(
        Number(granted?.s) - Number(charged?.s ?? 0),
        Number(remaining?.s),
        'grants − charges = remaining credit',
      );
      assert.equal(account?.held_micros, Number(holds?.s ?? 0), 'the held total equals the open holds');
    };

    it('every model is charged exactly its price for the tokens used, model-a’s split included', async () => {
      const { key, accountId } = await enterprise();
      await server.call('POST', `/api/admin/accounts/${accountId}/credits`, {
        key: ADMIN_KEY,
        body: { amount_usd: 10 },
      });
      for (const model of MODEL_CATALOG) {
        const before = await balanceOf(key);
        const response = await chat(key, {
          model: model.id,
          messages: [{ role: 'user', content: `Price check for ${model.id}` }],
        });
        assert.equal(response.status, 200);
        const { prompt_tokens: prompt, completion_tokens: completion } = response.body.usage;
        const expected = Math.ceil(
          (prompt * model.inputMicrosPerMillion + completion * model.outputMicrosPerMillion) / 1e6,
        );
        assert.equal(
          Number(response.headers.get('x-tollgate-cost-usd')) * 1e6,
          expected,
          `${model.id} cost header`,
        );
        assert.equal(before - (await balanceOf(key)), expected, `${model.id} charge`);
        const record = await opened.db.get<any>('SELECT * FROM usage_records WHERE request_id = $1', [
          response.headers.get('x-request-id'),
        ]);
        assert.equal(record.cost_micros, expected);
        assert.equal(record.prompt_tokens, prompt);
        assert.equal(record.completion_tokens, completion);
        assert.equal(record.model, model.id);
        assert.equal(record.deployment, `simulator/${model.id}`);
      }
      await ledgerBalances(accountId);
    });

    it('a streamed request is charged like a whole one', async () => {
      const { key, accountId } = await enterprise();
      await server.call('POST', `/api/admin/accounts/${accountId}/credits`, {
        key: ADMIN_KEY,
        body: { amount_usd: 1 },
      });
      const body = { model: 'model-a', messages: [{ role: 'user', content: 'stream and bill' }] };
      const whole = await chat(key, body);
      const before = await balanceOf(key);
      const streamed = await server.call('POST', '/v1/chat/completions', {
        key,
        body: { ...body, stream: true },
      });
      assert.equal(streamed.status, 200);
      const expected = Math.ceil(
        (whole.body.usage.prompt_tokens * 3_500_000 + whole.body.usage.completion_tokens * 18_000_000) / 1e6,
      );
      assert.equal(before - (await balanceOf(key)), expected);
    });

    it('200 concurrent requests against credit for 50 never spend more than the balance', async () => {
      const { key, accountId } = await enterprise();
      const messages = [{ role: 'user' as const, content: 'Concurrency test: answer briefly please.' }];
      const prompt = countPromptTokens(messages.map((m) => ({ ...m })));
      const each = costMicros(
        { inputMicrosPerMillion: 3_500_000, outputMicrosPerMillion: 18_000_000 },
        prompt,
        5,
      );
      await opened.db.run(
        'UPDATE credit_grants SET amount_micros = $2, remaining_micros = $2 WHERE account_id = $1',
        [accountId, each * 50],
      );
      const responses = await Promise.all(
        Array.from({ length: 200 }, () => chat(key, { model: 'model-a', max_tokens: 5, messages })),
      );
      const statuses = responses.map((r) => r.status);
      assert.equal(
        statuses.filter((s) => s === 200).length,
        50,
        `statuses: ${JSON.stringify(statuses.filter((s) => s !== 200 && s !== 402))}`,
      );
      assert.equal(statuses.filter((s) => s === 402).length, 150);
      const refused = responses.find((r) => r.status === 402)!;
      assert.equal(refused.body.error.code, 'payment_required');
      assert.equal(refused.body.error.type, 'billing_error');
      assert.equal(await balanceOf(key), 0, 'spent exactly the balance, never more');
      const account = await server.call('GET', '/api/account', { key });
      assert.equal(account.body.held_usd, 0, 'every hold released');
      await ledgerBalances(accountId);
      assert.equal(await server.services.store.usage.recordCount(accountId), 50);
    });

    it('the trial expires after 14 days: 402 saying so, and the account shows why', async () => {
      const { key } = await server.register();
      assert.equal(
        (await chat(key, { model: 'model-b', messages: [{ role: 'user', content: 'x' }] })).status,
        200,
      );
      time.advance(14 * DAY + 1);
      try {
        const refused = await chat(key, { model: 'model-b', messages: [{ role: 'user', content: 'x' }] });
        assert.equal(refused.status, 402);
        assert.match(refused.body.error.message, /trial/);
        const account = await server.call('GET', '/api/account', { key });
        assert.equal(account.body.billing_status, 'trial_expired');
        assert.equal(account.body.balance_usd, 0);
      } finally {
        time.advance(-(14 * DAY + 1));
      }
    });

    it('a paid plan whose period ended without renewal gets 402 with the reason', async () => {
      const { key } = await server.registerOn('starter');
      const account = await server.call('GET', '/api/account', { key });
      assert.equal(account.body.plan, 'starter');
      assert.equal(account.body.credits.find((c: any) => c.kind === 'plan').amount_usd, 20);
      time.advance(31 * DAY);
      try {
        server.services.cache.clear();
        const refused = await chat(key, { model: 'model-b', messages: [{ role: 'user', content: 'x' }] });
        assert.equal(refused.status, 402);
        assert.match(refused.body.error.message, /Starter plan ended .* without renewal/);
        assert.equal(
          (await server.call('GET', '/api/account', { key })).body.billing_status,
          'subscription_expired',
        );
      } finally {
        time.advance(-31 * DAY);
      }
    });

    it('usage draws from the grant that expires first', async () => {
      const { key, accountId } = await server.register();
      const later = new Date(time.now + 200 * DAY).toISOString();
      await server.call('POST', `/api/admin/accounts/${accountId}/credits`, {
        key: ADMIN_KEY,
        body: { amount_usd: 5, expires_at: later },
      });
      const response = await chat(key, { model: 'model-a', messages: [{ role: 'user', content: 'x' }] });
      const cost = Math.round(Number(response.headers.get('x-tollgate-cost-usd')) * 1e6);
      await server.services.settlements.flush();
      const credits = (await server.call('GET', '/api/account', { key })).body.credits;
      assert.equal(
        Math.round(credits.find((c: any) => c.kind === 'trial').remaining_usd * 1e6),
        1_000_000 - cost,
      );
      assert.equal(credits.find((c: any) => c.kind === 'admin').remaining_usd, 5);
    });

    it('settling the same request twice charges it once', async () => {
      const { key, accountId } = await server.register();
      const settlement = {
        requestId: `req_twice_${backend.name}`,
        accountId,
        keyId: 'key_x',
        model: 'model-b',
        deployment: 'simulator/model-b',
        promptTokens: 1000,
        completionTokens: 1000,
        estimated: false,
        costMicros: 260,
        status: 'ok' as const,
        latencyMs: 5,
        ttftMs: null,
        createdAt: time.now,
      };
      await server.services.store.ledger.settle([settlement]);
      await server.services.store.ledger.settle([settlement, settlement]);
      assert.equal(await balanceOf(key), 1_000_000 - 260);
      await ledgerBalances(accountId);
    });

    it('GET /api/usage groups the account’s tokens and cost by day, model and key', async () => {
      const { key } = await enterprise();
      const { accountId } = await server.services.accounts
        .authenticate(key, '127.0.0.1')
        .then((p) => ({ accountId: p.kind === 'user' ? p.account.id : '' }));
      await server.call('POST', `/api/admin/accounts/${accountId}/credits`, {
        key: ADMIN_KEY,
        body: { amount_usd: 1 },
      });
      const a = await chat(key, { model: 'model-b', messages: [{ role: 'user', content: 'one' }] });
      const b = await chat(key, { model: 'model-c', messages: [{ role: 'user', content: 'two' }] });
      await server.services.settlements.flush();
      const byModel = await server.call('GET', '/api/usage?group_by=model', { key });
      assert.equal(byModel.status, 200);
      assert.deepEqual(
        byModel.body.data.map((row: any) => [row.model, row.requests, row.total_tokens]),
        [
          ['model-b', 1, a.body.usage.total_tokens],
          ['model-c', 1, b.body.usage.total_tokens],
        ],
      );
      const byDay = await server.call('GET', `/api/usage?from=${utcDay(time.now)}&to=${utcDay(time.now)}`, {
        key,
      });
      assert.equal(byDay.body.data[0].day, utcDay(time.now));
      assert.equal(byDay.body.total.requests, 2);
      const bad = await server.call('GET', '/api/usage?group_by=week', { key });
      assert.equal(bad.status, 400);
    });

    it('GET /api/stats/segmented needs the admin key and counts users, activity and today', async () => {
      const { key } = await server.register();
      assert.equal((await server.call('GET', '/api/stats/segmented', { key })).status, 403);
      assert.equal((await server.call('GET', '/api/stats/segmented')).status, 401);
      const before = (await server.call('GET', '/api/stats/segmented', { key: ADMIN_KEY })).body;
      const response = await chat(key, {
        model: 'model-b',
        messages: [{ role: 'user', content: 'count me' }],
      });
      await server.services.settlements.flush();
      const stats = (await server.call('GET', '/api/stats/segmented', { key: ADMIN_KEY })).body;
      assert.deepEqual(Object.keys(stats).sort(), [
        'active_users_30d',
        'active_users_7d',
        'paid_users',
        'today_cost',
        'today_tokens',
        'total_users',
        'verified_users',
      ]);
      assert.equal(stats.total_users, before.total_users);
      assert.equal(stats.active_users_7d, before.active_users_7d + 1);
      assert.equal(stats.today_tokens, before.today_tokens + response.body.usage.total_tokens);
      assert.ok(stats.today_cost > before.today_cost);
      assert.ok(stats.paid_users >= 1, 'the enterprise and starter accounts above');
    });

    it('retention deletes records older than 90 days in batches and keeps the rollups', async () => {
      const { key, accountId } = await server.register();
      await chat(key, { model: 'model-b', messages: [{ role: 'user', content: 'old' }] });
      await server.services.settlements.flush();
      await opened.db.run('UPDATE usage_records SET created_at = created_at - $2 WHERE account_id = $1', [
        accountId,
        91 * DAY,
      ]);
      const rollupBefore = await opened.db.get<{ n: number }>(
        'SELECT COUNT(*) AS n FROM usage_daily WHERE account_id = $1',
        [accountId],
      );
      const { createRetentionJob } = await import('../src/jobs/scheduler.ts');
      const job = createRetentionJob(server.services.store, time.clock, 90, server.services.logger);
      assert.equal(
        await server.services.scheduler.runOnce({ ...job, name: `retention-${backend.name}` }),
        true,
      );
      assert.equal(await server.services.store.usage.recordCount(accountId), 0);
      const rollupAfter = await opened.db.get<{ n: number }>(
        'SELECT COUNT(*) AS n FROM usage_daily WHERE account_id = $1',
        [accountId],
      );
      assert.equal(Number(rollupAfter?.n), Number(rollupBefore?.n));
    });
  });
}
