// Exact answers after a known setup: the statistics endpoint, the 90-day retention boundary and overage billing.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRetentionJob } from '../src/jobs/scheduler.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { createTestClock } from './helpers/clock.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-20T12:00:00Z');
// The spec's prices in USD per million tokens.
const MODEL_A = { input: 3.5, output: 18 };

for (const backend of BACKENDS) {
  const skip = await backend.unavailable();
  describe(`exact answers on ${backend.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let server: TestServer;
    const time = createTestClock(NOW - 40 * DAY);

    before(async () => {
      opened = await backend.open();
      server = await startTestServer({
        backend: opened,
        clock: time.clock,
        yaml: { simulator: { chunk_interval_ms: 0, first_token_ms: 0 } },
      });
    });
    after(async () => {
      await server?.close();
      await opened?.cleanup();
    });

    const chat = async (key: string, model = 'model-b') => {
      const response = await server.call('POST', '/v1/chat/completions', {
        key,
        body: { model, messages: [{ role: 'user', content: 'count me' }], max_tokens: 20 },
      });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      await server.services.settlements.flush();
      return response.body;
    };

    it('GET /api/stats/segmented: exact counts, tokens and USD cost after a known setup', async () => {
      time.now = NOW - 40 * DAY;
      const old = await server.register(); // active 40 days ago only
      await chat(old.key);
      time.now = NOW - 10 * DAY;
      const monthly = await server.register(); // active 10 days ago: in 30 days, not in 7
      await chat(monthly.key);
      time.now = NOW - 2 * 3_600_000; // today (UTC), two hours ago
      const verified = await server.register();
      await server.services.store.accounts.markVerified(verified.accountId);
      const paying = await server.registerOn('starter');
      const first = await chat(paying.key, 'model-a');
      const second = await chat(paying.key, 'model-a');
      time.now = NOW;

      const stats = (await server.call('GET', '/api/stats/segmented', { key: ADMIN_KEY })).body;
      const tokens = [first, second].reduce((sum, answer) => sum + answer.usage.total_tokens, 0);
      // Each request is priced on its own and rounded up to a whole µUSD.
      const micros = [first, second].reduce(
        (sum, answer) =>
          sum +
          Math.ceil(
            answer.usage.prompt_tokens * MODEL_A.input + answer.usage.completion_tokens * MODEL_A.output,
          ),
        0,
      );
      assert.deepEqual(
        { ...stats, today_cost: undefined },
        {
          total_users: 4,
          verified_users: 1,
          active_users_7d: 1,
          active_users_30d: 2,
          paid_users: 1,
          today_tokens: tokens,
          today_cost: undefined,
        },
      );
      assert.equal(typeof stats.today_cost, 'number');
      assert.ok(
        Math.abs(stats.today_cost - micros / 1e6) < 1e-9,
        `today_cost ${stats.today_cost} USD, expected ${micros / 1e6}`,
      );
      assert.ok(stats.today_cost < 1, 'USD, not micro-USD');
    });

    it('request logs are kept exactly 90 days: a record at 89 days stays, one at 91 days goes', async () => {
      assert.equal(server.services.config.retentionDays, 90, 'the spec: 90 days');
      time.now = NOW - 91 * DAY;
      const { key, accountId } = await server.register();
      const gone = await chat(key);
      time.now = NOW - 89 * DAY;
      const kept = await chat(key);
      time.now = NOW;
      const ids = async () =>
        (
          await opened.db.all<{ created_at: number }>(
            'SELECT created_at FROM usage_records WHERE account_id = $1 ORDER BY created_at',
            [accountId],
          )
        ).map((row) => Number(row.created_at));
      assert.deepEqual(await ids(), [NOW - 91 * DAY, NOW - 89 * DAY]);
      const job = createRetentionJob(
        server.services.store,
        time.clock,
        server.services.config.retentionDays,
        server.services.logger,
      );
      assert.equal(
        await server.services.scheduler.runOnce({ ...job, name: `retention-exact-${backend.name}` }),
        true,
      );
      assert.deepEqual(await ids(), [NOW - 89 * DAY], 'the 89-day record is kept, the 91-day one deleted');
      assert.ok(gone.id && kept.id);
    });

    it('overage: usage beyond the plan allowance is paid from top-up credit at the model list price', async () => {
      time.now = NOW;
      const { key, accountId } = await server.registerOn('starter');
      // The allowance is almost used up: 10 µUSD of it remain; a top-up of $5 is there for what goes beyond.
      await opened.db.run(
        "UPDATE credit_grants SET remaining_micros = 10 WHERE account_id = $1 AND kind = 'plan'",
        [accountId],
      );
      await opened.db.run(
        "UPDATE credit_grants SET remaining_micros = 0 WHERE account_id = $1 AND kind = 'trial'",
        [accountId],
      );
      await server.services.store.ledger.addGrant({
        id: `grant_topup_${backend.name}`,
        accountId,
        kind: 'topup',
        amountMicros: 5_000_000,
        remainingMicros: 5_000_000,
        expiresAt: NOW + 365 * DAY,
        createdAt: NOW,
        source: 'test',
      });
      server.services.cache.clear();
      const answer = await chat(key, 'model-a');
      const cost = Math.ceil(
        answer.usage.prompt_tokens * MODEL_A.input + answer.usage.completion_tokens * MODEL_A.output,
      );
      assert.ok(cost > 10, `the request (${cost} µUSD) goes beyond the allowance`);
      const remaining = async (kind: string) =>
        Number(
          (
            await opened.db.get<{ r: number }>(
              'SELECT SUM(remaining_micros) AS r FROM credit_grants WHERE account_id = $1 AND kind = $2',
              [accountId, kind],
            )
          )?.r,
        );
      assert.equal(await remaining('plan'), 0, 'the allowance is used first');
      assert.equal(
        await remaining('topup'),
        5_000_000 - (cost - 10),
        'the overage at the list price, no multiplier',
      );
      const record = await opened.db.get<{ cost_micros: number; uncollected_micros: number | null }>(
        'SELECT cost_micros, uncollected_micros FROM usage_records WHERE account_id = $1',
        [accountId],
      );
      assert.equal(Number(record?.cost_micros), cost);
      assert.equal(Number(record?.uncollected_micros ?? 0), 0);
    });
  });
}
