import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';

/** A single Redis (or Sentinel-managed) or a Redis Cluster: every key of a subject shares one hash tag. */
export type RedisClient = Redis | Cluster;

/** A Lua script run by its SHA1, loaded again when Redis lost it. */
export class RedisScript {
  readonly #source: string;
  readonly #sha: string;
  constructor(source: string) {
    this.#source = source;
    this.#sha = createHash('sha1').update(source).digest('hex');
  }
  /** Loads the script into Redis ahead of its first run (SCRIPT LOAD). */
  async load(redis: RedisClient): Promise<void> {
    await redis.script('LOAD', this.#source);
  }
  /** EVALSHA, loading the script once if Redis does not have it (after a restart or a flush). */
  async run(redis: RedisClient, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.#sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!String((error as Error).message).includes('NOSCRIPT')) throw error;
      return redis.eval(this.#source, keys.length, ...keys, ...args);
    }
  }
}
