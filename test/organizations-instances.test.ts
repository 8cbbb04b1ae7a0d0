import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { costMicros } from '../src/billing/pricing.ts';
import { countPromptTokens } from '../src/core/count-tokens.ts';
import { connectRedis } from '../src/composition/connect-redis.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { REDIS_URL, redisUnavailable, testPrefix } from './helpers/redis.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

const silent = pino({ level: 'silent' });
const PASSWORD = 'correct horse battery';
const MESSAGES = [{ role: 'user' as const, content: 'Two instances, one member limit: answer briefly.' }];
const postgres = BACKENDS.find((b) => b.name === 'postgres');
const skip =
  (await redisUnavailable()) ??
  (postgres ? await postgres.unavailable() : 'PostgreSQL backend excluded by TOLLGATE_TEST_BACKENDS');

describe(
  'organization members across two instances sharing PostgreSQL and Redis',
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

    /** An Enterprise organization with a developer who has two keys. */
    const organizationWithDeveloper = async () => {
      const owner = await a.registerOn('enterprise');
      const email = `dev-${Date.now()}-${Math.random()}@example.com`;
      const invited = await a.call('POST', `/api/organizations/${owner.accountId}/invitations`, {
        key: owner.key,
        body: { email, role: 'developer' },
      });
      const accepted = await b.call('POST', '/api/invitations/accept', {
        body: { token: invited.body.token, email, password: PASSWORD },
      });
      assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
      const login = await a.call('POST', '/api/auth/login', { body: { email, password: PASSWORD } });
      const headers = {
        cookie: (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '',
        'x-csrf-token': login.body.csrf_token as string,
        'x-tollgate-organization': owner.accountId,
      };
      const keys: string[] = [];
      for (const name of ['one', 'two']) {
        const created = await a.call('POST', '/api/keys', { headers, body: { name } });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        keys.push(created.body.key);
      }
      return { owner, memberId: accepted.body.member.id as string, keys };
    };
    const chat = (server: TestServer, key: string) =>
      server.call('POST', '/v1/chat/completions', {
        key,
        body: { model: 'model-a', max_tokens: 5, messages: MESSAGES },
      });

    it('stops a removed member’s keys on the other instance within a second', async () => {
      const { owner, memberId, keys } = await organizationWithDeveloper();
      assert.equal((await chat(b, keys[0]!)).status, 200, 'b has the key cached');
      const removed = await a.call('DELETE', `/api/organizations/${owner.accountId}/members/${memberId}`, {
        key: owner.key,
      });
      assert.equal(removed.status, 200);
      const started = Date.now();
      let status = 200;
      while (status === 200 && Date.now() - started < 1000) {
        status = (await chat(b, keys[0]!)).status;
        if (status === 200) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(status, 403);
    });

    it('30 concurrent requests on two keys alternated between the instances spend at most the member limit', async () => {
      const { owner, memberId, keys } = await organizationWithDeveloper();
      const each = costMicros(
        a.services.config.models.get('model-a')!,
        countPromptTokens(MESSAGES.map((m) => ({ ...m }))),
        5,
      );
      const limitMicros = each * 8 + Math.floor(each / 3);
      const limited = await a.call('PATCH', `/api/organizations/${owner.accountId}/members/${memberId}`, {
        key: owner.key,
        body: { limit_usd: limitMicros / 1e6, limit_period: 'daily' },
      });
      assert.equal(limited.status, 200);
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_, i) => chat(i % 2 ? a : b, keys[Math.floor(i / 2) % 2]!)),
      );
      const statuses = answers.map((r) => r.status);
      assert.equal(statuses.filter((s) => s === 200).length, 8, JSON.stringify(statuses));
      assert.equal(statuses.filter((s) => s === 402).length, 22, JSON.stringify(statuses));
      await a.services.settlements.flush();
      await b.services.settlements.flush();
      const row = await opened.db.get<{ s: number | string | null }>(
        `SELECT CAST(SUM(u.cost_micros) AS BIGINT) AS s FROM usage_records u JOIN api_keys k ON k.id = u.key_id
       WHERE k.member_id = $1`,
        [memberId],
      );
      assert.equal(Number(row?.s), each * 8);
    });
  },
);
