import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { LimiterFailurePolicy } from '../config/config.ts';
import type { Limiter } from '../limits/limiter.ts';
import { RedisLimiter } from '../limits/redis-limiter.ts';
import { ResilientLimiter } from '../limits/resilient-limiter.ts';
import type { Bus } from './bus.ts';
import { createRedisBus } from './redis-bus.ts';

export interface RedisBackends {
  limiter: Limiter;
  bus: Bus;
  /** Resolves once connected, or after `timeoutMs` (admission falls back meanwhile). */
  ready(timeoutMs: number): Promise<boolean>;
}

/**
 * The shared backends of a multi-instance deployment: limits and cache invalidation over one Redis.
 * Commands fail fast while Redis is away (no offline queue) and the clients reconnect on their own.
 * The bus owns both connections: closing it closes them.
 */
export function connectRedis(
  url: string,
  policy: LimiterFailurePolicy,
  logger: Logger,
  keyPrefix = 'tg',
): RedisBackends {
  // One line when Redis goes away (the clients report every failed reconnection) and one when it is back.
  let down = false;
  const lost = (error: Error): void => {
    if (down) return;
    down = true;
    logger.error(
      { err: error, policy },
      'Redis is unreachable: limits follow the failure policy and invalidations wait until it returns',
    );
  };
  const retryStrategy = (times: number): number => Math.min(100 * times, 2_000);
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 1_000,
    retryStrategy,
  });
  const subscriber = new Redis(url, { maxRetriesPerRequest: null, retryStrategy });
  client.on('error', lost);
  subscriber.on('error', lost);
  client.on('ready', () => {
    if (!down) return;
    down = false;
    logger.info('Redis answers again: limits are shared again');
  });
  const bus = createRedisBus(client, subscriber, logger, `${keyPrefix}:invalidate`);
  const closeBus = bus.close.bind(bus);
  bus.close = async () => {
    await closeBus();
    client.disconnect();
    subscriber.disconnect();
  };
  return {
    limiter: new ResilientLimiter(new RedisLimiter(client, keyPrefix), policy, logger),
    bus,
    async ready(timeoutMs) {
      if (client.status === 'ready') return true;
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), timeoutMs);
        client.once('ready', () => {
          clearTimeout(timer);
          resolve(true);
        });
      });
    },
  };
}
