import { Cluster, Redis } from 'ioredis';
import type { Logger } from 'pino';
import { RedisHoldBook } from '../billing/redis-hold-book.ts';
import type { LedgerRepo } from '../store/ledger-repo.ts';
import type { LimiterFailurePolicy } from '../core/config.ts';
import type { Limiter } from '../core/rate-limits.ts';
import { RedisLimiter } from '../limits/redis-limiter.ts';
import type { RedisClient } from '../shared/redis-script.ts';
import { ResilientLimiter } from '../limits/resilient-limiter.ts';
import type { Bus } from '../shared/bus.ts';
import { promptReconnect, redisRetryStrategy } from '../shared/prompt-reconnect.ts';
import { createRedisBus } from '../shared/redis-bus.ts';

export interface RedisBackends {
  limiter: Limiter;
  bus: Bus;
  /** Resolves once connected, or after `timeoutMs` (admission falls back meanwhile). */
  ready(timeoutMs: number): Promise<boolean>;
  /** Credit holds in this Redis over the ledger (many instances on PostgreSQL: no transaction per request). */
  holds(ledger: LedgerRepo): RedisHoldBook;
}

/** The client settings Tollgate uses (fail fast while Redis is away, reconnect on its own). */
export interface ClientOptions {
  enableOfflineQueue?: boolean;
  maxRetriesPerRequest: number | null;
  commandTimeout?: number;
  retryStrategy: (times: number) => number;
}

/**
 * A client for `redis://…` / `rediss://…` (one server, or the primary Sentinel names), or for
 * `redis-cluster://host:port,host:port/` (a Redis Cluster: the listed nodes are seeds, the rest is discovered).
 */
export function createRedisClient(url: string, options: ClientOptions): RedisClient {
  const cluster = /^rediss?-cluster:\/\/([^/?#]*)/.exec(url);
  if (!cluster) return new Redis(url, options);
  const tls = url.startsWith('rediss-cluster:');
  const nodes = cluster[1]!.split(',').map((node) => {
    const at = node.lastIndexOf('@');
    const [host, port] = node.slice(at + 1).split(':');
    return { host: host || '127.0.0.1', port: Number(port || 6379) };
  });
  const credentials = /^[^:]+:\/\/([^@/,]*)@/.exec(url)?.[1];
  const [username, password] = credentials ? credentials.split(':').map(decodeURIComponent) : [];
  return new Cluster(nodes, {
    enableOfflineQueue: options.enableOfflineQueue ?? true,
    clusterRetryStrategy: options.retryStrategy,
    redisOptions: {
      ...options,
      ...(password !== undefined ? { password, ...(username ? { username } : {}) } : {}),
      ...(tls ? { tls: {} } : {}),
    },
  });
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
  const retryStrategy = redisRetryStrategy;
  const client = createRedisClient(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 1_000,
    retryStrategy,
  });
  const subscriber = createRedisClient(url, { maxRetriesPerRequest: null, retryStrategy });
  client.on('error', lost);
  subscriber.on('error', lost);
  let book: RedisHoldBook | undefined;
  client.on('ready', () => {
    // The hold lease, the generation check and releases that waited: at once, not at the next heartbeat.
    book?.beatNow();
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
    limiter: new ResilientLimiter(
      new RedisLimiter(client, keyPrefix, promptReconnect(client)),
      policy,
      logger,
    ),
    bus,
    holds: (ledger) => (book = new RedisHoldBook({ redis: client, ledger, logger, prefix: keyPrefix })),
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
