import { Redis } from 'ioredis';
import { skipOrFail } from './backends.ts';

export const REDIS_URL = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379';

let probe: Promise<string | undefined> | undefined;

/** Why Redis cannot be used here (a skip reason), or undefined when it can; rejects instead when `CI=true`. */
export function redisUnavailable(): Promise<string | undefined> {
  probe ??= (async () => {
    const client = new Redis(REDIS_URL, {
      lazyConnect: true,
      connectTimeout: 2000,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.ping();
      return undefined;
    } catch (error) {
      return `Redis is not reachable at ${REDIS_URL} (${(error as Error).message}); set TEST_REDIS_URL`;
    } finally {
      client.disconnect();
    }
  })().then(skipOrFail);
  return probe;
}

/** A key prefix of this test's own, and a way to delete what was written under it. */
export function testPrefix(): { prefix: string; cleanup: () => Promise<void> } {
  const prefix = `tgtest${process.pid}${Math.random().toString(36).slice(2, 8)}`;
  return {
    prefix,
    async cleanup() {
      const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
      client.on('error', () => {});
      let cursor = '0';
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
        cursor = next;
        if (keys.length > 0) await client.del(...keys);
      } while (cursor !== '0');
      client.disconnect();
    },
  };
}
