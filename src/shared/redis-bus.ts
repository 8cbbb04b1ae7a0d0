import type { RedisClient } from './redis-script.ts';
import type { Logger } from 'pino';
import type { Bus, InvalidationMessage } from './bus.ts';

/**
 * Invalidations over Redis pub/sub: a publish reaches this instance at once and every other within
 * the network round trip. Subscribing needs a connection of its own.
 */
export function createRedisBus(
  publisher: RedisClient,
  subscriber: RedisClient,
  logger: Logger,
  channel = 'tollgate:invalidate',
): Bus {
  const handlers: ((message: InvalidationMessage) => void)[] = [];
  const deliver = (message: InvalidationMessage): void => {
    for (const handler of handlers) handler(message);
  };
  void subscriber
    .subscribe(channel)
    .catch((error: unknown) => logger.error({ err: error }, 'cannot subscribe to invalidations'));
  subscriber.on('message', (from: string, text: string) => {
    if (from !== channel) return;
    try {
      deliver(JSON.parse(text) as InvalidationMessage);
    } catch (error) {
      logger.warn({ err: error }, 'malformed invalidation message');
    }
  });
  return {
    async publish(message) {
      deliver(message);
      await publisher.publish(channel, JSON.stringify(message));
    },
    subscribe(handler) {
      handlers.push(handler);
    },
    async close() {},
  };
}
