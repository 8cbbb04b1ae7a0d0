import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { costMicros } from '../src/billing/pricing.ts';
import { countPromptTokens } from '../src/gateway/count-tokens.ts';
import { connectRedis } from '../src/composition/connect-redis.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { REDIS_URL, redisUnavailable, testPrefix } from './helpers/redis.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

const silent = pino({ level: 'silent' });
const MESSAGES = [{ role: 'user' as const, content: 'Two instances, one key limit: answer briefly please.' }];
/** model-a with max_tokens 5: the simulator answers 5 tokens, so the charge equals the hold. */
const EACH = costMicros(
  { inputMicrosPerMillion: 3_500_000, outputMicrosPerMillion: 18_000_000 },
  countPromptTokens(MESSAGES.map((m) => ({ ...m }))),
  5,
);
const postgres = BACKENDS.find((b) => b.name === 'postgres');
const skip =
  (await redisUnavailable()) ??
  (postgres ? await postgres.unavailable() : 'PostgreSQL backend excluded by TOLLGATE_TEST_BACKENDS');

describe(
  'per-key controls across two instances sharing PostgreSQL and Redis',
  { skip: skip ?? false },
  () => {
    let opened: OpenedBackend;
    let a: TestServer;
    let b: TestServer;
    const redisPrefix = testPrefix();

    before(async () => {
      opened = await postgres!.open();
      const instance = async () => {
        const redis = connectRedis(REDIS_URL, 'local', silent, redisPrefix.prefix);
        await redis.ready(2000);
        return startTestServer({
          backend: opened,
          ownConnection: true,
          yaml: { simulator: { chunk_interval_ms: 0 } },
          extra: { limiter: redis.limiter, bus: redis.bus },
        });
      };
      a = await instance();
      b = await instance();
    });
    after(async () => {
      await a?.close();
      await b?.close();
      await opened?.cleanup();
      await redisPrefix.cleanup();
    });

    const chat = (server: TestServer, key: string, model = 'model-a') =>
      server.call('POST', '/v1/chat/completions', {
        key,
        body: { model, max_tokens: 5, messages: MESSAGES },
      });
    const limitedKey = async (controls: Record<string, unknown>) => {
      const owner = await a.registerOn('enterprise');
      const created = await a.call('POST', '/api/keys', { key: owner.key, body: controls });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return { owner, id: created.body.id as string, key: created.body.key as string };
    };

    it('60 concurrent requests alternated between the instances spend at most the key limit', async () => {
      const limitMicros = EACH * 20 + Math.floor(EACH / 3);
      const { id, key } = await limitedKey({ limit_usd: limitMicros / 1e6, limit_period: 'daily' });
      const responses = await Promise.all(Array.from({ length: 60 }, (_, i) => chat(i % 2 ? a : b, key)));
      const statuses = responses.map((r) => r.status);
      assert.equal(statuses.filter((s) => s === 200).length, 20, JSON.stringify(statuses));
      assert.equal(statuses.filter((s) => s === 402).length, 40);
      await a.services.settlements.flush();
      await b.services.settlements.flush();
      const row = await opened.db.get<{ s: number | null }>(
        'SELECT CAST(SUM(cost_micros - uncollected_micros) AS BIGINT) AS s FROM usage_records WHERE key_id = $1',
        [id],
      );
      assert.equal(Number(row?.s), EACH * 20);
      assert.ok(Number(row?.s) <= limitMicros);
      const status = await b.call('GET', '/api/key', { key });
      assert.equal(status.body.held_usd, 0);
      assert.equal(status.body.usage.today_usd, (EACH * 20) / 1e6);
    });

    it('controls changed on one instance apply on the other within a second', async () => {
      const { owner, id, key } = await limitedKey({ allowed_models: ['model-a'] });
      assert.equal((await chat(b, key)).status, 200, 'b has the key cached');
      const patched = await a.call('PATCH', `/api/keys/${id}`, {
        key: owner.key,
        body: { allowed_models: ['model-b'] },
      });
      assert.equal(patched.status, 200);
      const started = Date.now();
      let status = 200;
      while (status === 200 && Date.now() - started < 1000) {
        status = (await chat(b, key)).status;
        if (status === 200) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(status, 403);
    });
  },
);
