import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RedisClient } from './redis-script.ts';
import { promptReconnect, redisRetryStrategy } from './prompt-reconnect.ts';

describe('reconnecting Redis promptly', () => {
  it('a storm of requests finding the client down starts one connection per 100 ms, not one each', () => {
    let connects = 0;
    const backoffTimer = setTimeout(() => assert.fail('the backoff timer should have been cleared'), 60_000);
    const client = {
      status: 'reconnecting',
      reconnectTimeout: backoffTimer as NodeJS.Timeout | null,
      connect: async () => {
        connects++;
      },
    };
    let now = 1_000;
    try {
      const kick = promptReconnect(client as unknown as RedisClient, () => now);
      for (let i = 0; i < 1_000; i++) kick();
      assert.equal(connects, 1);
      assert.equal(
        client.reconnectTimeout,
        null,
        'the backoff timer is cleared: it starts no second connection',
      );
      now += 99;
      kick();
      assert.equal(connects, 1);
      now += 1;
      kick();
      assert.equal(connects, 2);
      client.status = 'ready';
      now += 1_000;
      kick();
      assert.equal(connects, 2, 'a connected client is left alone');
    } finally {
      clearTimeout(backoffTimer);
    }
  });

  it('the reconnection backoff grows from ~100 ms to at most 2 s', () => {
    for (let times = 1; times < 50; times++) {
      const delay = redisRetryStrategy(times);
      assert.ok(delay >= Math.min(100 * 2 ** (times - 1), 2_000) / 2 && delay <= 2_000, `${times}: ${delay}`);
    }
  });
});
