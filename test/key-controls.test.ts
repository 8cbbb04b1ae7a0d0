import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { costMicros } from '../src/billing/pricing.ts';
import { countPromptTokens } from '../src/core/count-tokens.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { createTestClock } from './helpers/clock.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** model-a's list prices, µUSD per million tokens. */
const MODEL_A = { inputMicrosPerMillion: 3_500_000, outputMicrosPerMillion: 18_000_000 };
const MESSAGES = [{ role: 'user' as const, content: 'Key limit test: answer briefly please.' }];
/** What one model-a request with max_tokens 5 costs, and holds: the simulator always answers 5 tokens here. */
const EACH = costMicros(MODEL_A, countPromptTokens(MESSAGES.map((m) => ({ ...m }))), 5);

for (const backend of BACKENDS) {
  const skip = await backend.unavailable();
  describe(`per-key controls on ${backend.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let server: TestServer;
    // A Saturday in October: the next day is in another month but the same ISO week.
    const time = createTestClock(Date.parse('2026-10-31T12:00:00Z'));

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

    const chat = (key: string, model = 'model-a') =>
      server.call('POST', '/v1/chat/completions', {
        key,
        body: { model, max_tokens: 5, messages: MESSAGES },
      });
    /** An Enterprise account (no rate limits) with its trial dollar, and a second key with these controls. */
    const keyWith = async (controls: Record<string, unknown>) => {
      const owner = await server.registerOn('enterprise');
      const created = await server.call('POST', '/api/keys', {
        key: owner.key,
        body: { name: 'limited', ...controls },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return { owner, id: created.body.id as string, key: created.body.key as string, created };
    };
    const chargedTo = async (keyId: string): Promise<number> => {
      await server.services.settlements.flush();
      const row = await opened.db.get<{ s: number | null }>(
        'SELECT CAST(SUM(cost_micros - uncollected_micros) AS BIGINT) AS s FROM usage_records WHERE key_id = $1',
        [keyId],
      );
      return Number(row?.s ?? 0);
    };
    const ownKey = async (key: string) => {
      await server.services.settlements.flush();
      return server.call('GET', '/api/key', { key });
    };

    it('controls are set on create, shown in GET /api/keys and changed with PATCH', async () => {
      const expiresAt = new Date(time.now + 30 * DAY).toISOString();
      const { owner, id, created } = await keyWith({
        limit_usd: 2.5,
        limit_period: 'weekly',
        expires_at: expiresAt,
        allowed_models: ['model-a', 'model-b'],
      });
      assert.equal(created.body.limit_usd, 2.5);
      assert.equal(created.body.limit_period, 'weekly');
      assert.equal(created.body.expires_at, expiresAt);
      assert.deepEqual(created.body.allowed_models, ['model-a', 'model-b']);
      const listed = (await server.call('GET', '/api/keys', { key: owner.key })).body.data;
      const shown = listed.find((k: { id: string }) => k.id === id);
      assert.equal(shown.limit_usd, 2.5);
      assert.equal(shown.limit_period, 'weekly');
      assert.equal(shown.expires_at, expiresAt);
      assert.deepEqual(shown.allowed_models, ['model-a', 'model-b']);
      const first = listed.find((k: { id: string }) => k.id === owner.keyId);
      assert.equal(first.limit_usd, null, 'a key without controls shows none');

      const patched = await server.call('PATCH', `/api/keys/${id}`, {
        key: owner.key,
        body: { limit_usd: 1, limit_period: 'daily', allowed_models: null },
      });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      assert.equal(patched.body.limit_usd, 1);
      assert.equal(patched.body.limit_period, 'daily');
      assert.equal(patched.body.expires_at, expiresAt, 'a field not sent stays as it was');
      assert.equal(patched.body.allowed_models, null);
      const removed = await server.call('PATCH', `/api/keys/${id}`, {
        key: owner.key,
        body: { limit_usd: null },
      });
      assert.equal(removed.body.limit_usd, null);
      assert.equal(removed.body.limit_period, null, 'no period without a limit');
    });

    it('bad controls are a 400 naming the field; another account’s key is a 404', async () => {
      const { owner, id } = await keyWith({});
      const bad = async (body: Record<string, unknown>, field: RegExp) => {
        const answer = await server.call('PATCH', `/api/keys/${id}`, { key: owner.key, body });
        assert.equal(answer.status, 400, JSON.stringify(answer.body));
        assert.equal(answer.body.error.code, 'invalid_request');
        assert.match(answer.body.error.message, field);
      };
      await bad({ limit_usd: -1 }, /limit_usd/);
      await bad({ limit_period: 'hourly' }, /limit_period/);
      await bad({ limit_period: 'daily' }, /limit_period.*limit_usd/);
      await bad({ expires_at: 'tomorrow' }, /expires_at/);
      await bad({ expires_at: new Date(time.now - 1000).toISOString() }, /expires_at: must be in the future/);
      await bad({ allowed_models: ['model-z'] }, /allowed_models: model-z is not a model/);
      await bad({ allowed_models: [] }, /allowed_models/);
      const stranger = await server.register();
      const foreign = await server.call('PATCH', `/api/keys/${id}`, {
        key: stranger.key,
        body: { limit_usd: 5 },
      });
      assert.equal(foreign.status, 404);
    });

    it('100 concurrent requests against a key limit for 30 spend exactly the limit, never more', async () => {
      // Room for 30.5 requests: the 31st hold cannot fit.
      const limitMicros = EACH * 30 + Math.floor(EACH / 2);
      const { id, key } = await keyWith({ limit_usd: limitMicros / 1e6, limit_period: 'monthly' });
      const responses = await Promise.all(Array.from({ length: 100 }, () => chat(key)));
      const statuses = responses.map((r) => r.status);
      assert.equal(
        statuses.filter((s) => s === 200).length,
        30,
        JSON.stringify(statuses.filter((s) => s !== 200 && s !== 402)),
      );
      assert.equal(statuses.filter((s) => s === 402).length, 70);
      const refused = responses.find((r) => r.status === 402)!;
      assert.equal(refused.body.error.code, 'payment_required');
      assert.match(refused.body.error.message, /this API key's spending limit of \$0\.\d+ per month/);
      const charged = await chargedTo(id);
      assert.ok(charged <= limitMicros, `charged ${charged} µUSD, limit ${limitMicros}`);
      assert.equal(charged, EACH * 30);
      const status = await ownKey(key);
      assert.equal(status.body.held_usd, 0, 'every hold released');
      const listed = (await server.call('GET', '/api/keys', { key })).body.data;
      const shown = listed.find((k: { id: string }) => k.id === id);
      assert.equal(shown.spent_this_period_usd, (EACH * 30) / 1e6);
      assert.equal(shown.remaining_usd, (limitMicros - EACH * 30) / 1e6);
      assert.equal(shown.resets_at, '2026-11-01T00:00:00.000Z');
      assert.equal(status.body.remaining_usd, (limitMicros - EACH * 30) / 1e6);
      assert.equal(status.body.usage.this_period_usd, (EACH * 30) / 1e6);
      // The account's balance had room: the key's own limit, not the balance, refused the rest.
      const account = await server.call('GET', '/api/account', { key });
      assert.ok(account.body.available_usd * 1e6 > EACH * 10);
    });

    it('a daily limit starts over at the next UTC midnight', async () => {
      const { key } = await keyWith({ limit_usd: (EACH * 2) / 1e6, limit_period: 'daily' });
      assert.equal((await chat(key)).status, 200);
      assert.equal((await chat(key)).status, 200);
      await server.services.settlements.flush();
      const third = await chat(key);
      assert.equal(third.status, 402);
      assert.match(third.body.error.message, /per day \(UTC\).*resets at 2026-11-01T00:00:00\.000Z/);
      const before = await ownKey(key);
      assert.equal(before.body.remaining_usd, 0);
      assert.equal(before.body.resets_at, '2026-11-01T00:00:00.000Z');
      const start = time.now;
      time.advance(Date.parse('2026-11-01T00:00:00Z') - start);
      try {
        assert.equal((await chat(key)).status, 200, 'a new day, a new allowance');
        const after = await ownKey(key);
        assert.equal(after.body.usage.this_period_usd, EACH / 1e6);
        assert.equal(after.body.remaining_usd, EACH / 1e6);
      } finally {
        time.advance(start - time.now);
      }
    });

    it('a limit that never resets stays spent the next month', async () => {
      const { key } = await keyWith({ limit_usd: EACH / 1e6, limit_period: 'never' });
      assert.equal((await chat(key)).status, 200);
      await server.services.settlements.flush();
      const start = time.now;
      time.advance(40 * DAY);
      try {
        const refused = await chat(key);
        assert.equal(refused.status, 402);
        assert.match(refused.body.error.message, /in total \(it never resets\)/);
      } finally {
        time.advance(start - time.now);
      }
    });

    it('an expired key gets 401 naming its expiry, on the chat route and /api', async () => {
      const expiresAt = time.now + HOUR;
      const { key } = await keyWith({ expires_at: new Date(expiresAt).toISOString() });
      assert.equal((await chat(key)).status, 200);
      const start = time.now;
      time.advance(HOUR);
      try {
        const refused = await chat(key);
        assert.equal(refused.status, 401);
        assert.equal(refused.body.error.code, 'unauthorized');
        assert.match(refused.body.error.message, /expired at 2026-10-31T13:00:00\.000Z/);
        assert.equal((await server.call('GET', '/api/key', { key })).status, 401);
      } finally {
        time.advance(start - time.now);
      }
    });

    it('a model outside the allowed models gets 403 naming the rule; a change applies at once', async () => {
      const { owner, id, key } = await keyWith({ allowed_models: ['model-b'] });
      assert.equal((await chat(key, 'model-b')).status, 200);
      const refused = await chat(key, 'model-a');
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error.code, 'forbidden');
      assert.match(
        refused.body.error.message,
        /may not use model model-a: its allowed models rule permits only model-b/,
      );
      // The key is cached after its first request: the change must drop it.
      await server.call('PATCH', `/api/keys/${id}`, {
        key: owner.key,
        body: { allowed_models: ['model-a'] },
      });
      assert.equal((await chat(key, 'model-a')).status, 200);
      assert.equal((await chat(key, 'model-b')).status, 403);
    });

    it('GET /api/key reports today, this week and this month exactly', async () => {
      const { key } = await keyWith({ limit_usd: 1, limit_period: 'weekly' });
      const start = time.now;
      const costOf = (body: any): number =>
        costMicros(MODEL_A, body.usage.prompt_tokens, body.usage.completion_tokens);
      try {
        // Saturday 31 October, Sunday 1 November (same ISO week, new month), Monday 2 November (new week).
        const saturday = costOf((await chat(key)).body);
        time.advance(Date.parse('2026-11-01T09:00:00Z') - time.now);
        const sunday = costOf((await chat(key)).body) + costOf((await chat(key)).body);
        let status = (await ownKey(key)).body;
        assert.deepEqual(status.usage, {
          today_usd: sunday / 1e6,
          this_week_usd: (saturday + sunday) / 1e6,
          this_month_usd: sunday / 1e6,
          this_period_usd: (saturday + sunday) / 1e6,
        });
        assert.equal(status.remaining_usd, (1_000_000 - saturday - sunday) / 1e6);
        assert.equal(status.period_started_at, '2026-10-26T00:00:00.000Z');
        assert.equal(status.resets_at, '2026-11-02T00:00:00.000Z');
        time.advance(Date.parse('2026-11-02T09:00:00Z') - time.now);
        const monday = costOf((await chat(key)).body);
        status = (await ownKey(key)).body;
        assert.deepEqual(status.usage, {
          today_usd: monday / 1e6,
          this_week_usd: monday / 1e6,
          this_month_usd: (sunday + monday) / 1e6,
          this_period_usd: monday / 1e6,
        });
        assert.equal(status.remaining_usd, (1_000_000 - monday) / 1e6);
        assert.equal(status.limit_usd, 1);
      } finally {
        time.advance(start - time.now);
      }
    });
  });
}
