import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { connectRedis, type RedisBackends } from '../src/composition/connect-redis.ts';
import { redisServerMissing, startRedisServer, type OwnRedis } from './helpers/redis-server.ts';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.ts';

/**
 * After Redis comes back, the first request that finds the client down makes it reconnect at once: requests
 * are refused for a few milliseconds, not for the rest of the reconnection backoff (up to 2 s). Redis is a
 * server of the test's own behind a proxy the test cuts; the deny policy makes "not connected" visible.
 */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('Redis back after an outage', { skip: (await redisServerMissing()) ?? false }, () => {
  let redis: OwnRedis;
  let proxy: TcpProxy;
  let backends: RedisBackends;

  before(async () => {
    redis = await startRedisServer();
    proxy = await startTcpProxy(redis.port);
    backends = connectRedis(`redis://127.0.0.1:${proxy.port}`, 'deny', pino({ level: 'silent' }), 'rc');
    assert.ok(await backends.ready(5_000));
  });
  after(async () => {
    await backends?.bus.close();
    await proxy?.close();
    await redis?.stop();
  });

  let requests = 0;
  const admitted = async (): Promise<boolean> =>
    (
      await backends.limiter.admit({
        subject: 'key_reconnect',
        requestId: `r${requests++}`,
        limits: { requestsPerMinute: 1_000_000, tokensPerMinute: null, dailyTokens: null },
        tokens: 1,
        now: Date.now(),
      })
    ).allowed;

  it('the first requests after it returns reconnect at once, rather than when the backoff ends', async () => {
    assert.equal(await admitted(), true);
    await proxy.cut();
    // Long enough for the reconnection backoff to reach its cap (2 s between tries).
    await sleep(8_000);
    assert.equal(await admitted(), false, 'refused while Redis is away (deny policy)');
    await proxy.restore();
    const back = performance.now();
    while (!(await admitted())) {
      assert.ok(performance.now() - back < 5_000, 'served again within 5 s');
      await sleep(10);
    }
    const tookMs = performance.now() - back;
    assert.ok(tookMs < 300, `requests were refused for ${tookMs.toFixed(0)} ms after Redis returned`);
  });
});
