import type { Logger } from 'pino';
import type { Bus } from '../shared/bus.ts';
import type { KeyCache } from './key-cache.ts';

/** What a change makes stale: every key of an account, or one key. */
export interface KeyTarget {
  accountId?: string;
  keyId?: string;
}

/** Drops cached keys here and, through the bus, on every other instance. */
export async function invalidateKeys(
  parts: { cache: KeyCache; bus: Bus; logger: Logger },
  target: KeyTarget,
): Promise<void> {
  parts.cache.invalidate(target);
  await parts.bus
    .publish(target)
    .catch((error: unknown) => parts.logger.warn({ err: error }, 'invalidation not published'));
}
