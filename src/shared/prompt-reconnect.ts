import type { RedisClient } from './redis-script.ts';
import { backoffDelay } from './retry-episode.ts';

/** Reconnection attempts while Redis is away: 100 ms doubling to 2 s, with jitter (ioredis's retryStrategy). */
export const redisRetryStrategy = (times: number): number =>
  backoffDelay(times - 1, { initialMs: 100, maxMs: 2_000 });

/** The most often a request that finds Redis down may start a reconnection of its own. */
const PROMPT_GAP_MS = 100;

/**
 * Returns a function a request calls when it finds the client down: while the client waits out its backoff
 * before the next reconnection, it tries now instead, so the first request after Redis is back does not wait
 * for the timer (up to 2 s). At most one such try per PROMPT_GAP_MS, so a storm of requests is not a storm of
 * connections.
 */
export function promptReconnect(client: RedisClient, now: () => number = Date.now): () => void {
  let last = Number.NEGATIVE_INFINITY;
  return () => {
    if (client.status !== 'reconnecting' || now() - last < PROMPT_GAP_MS) return;
    last = now();
    // ioredis keeps the backoff's timer privately; left running, it would start a second connection.
    const internal = client as unknown as { reconnectTimeout?: NodeJS.Timeout | null };
    if (internal.reconnectTimeout) clearTimeout(internal.reconnectTimeout);
    internal.reconnectTimeout = null;
    client.connect().catch(() => {});
  };
}
