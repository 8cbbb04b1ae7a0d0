import { randomBytes } from 'node:crypto';

/** A random identifier with a readable prefix, e.g. `acct_3hG…` (URL-safe, 96 random bits by default). */
export function newId(prefix: string, bytes = 12): string {
  return `${prefix}_${randomBytes(bytes).toString('base64url')}`;
}

/** Milliseconds since the epoch; injected everywhere so tests can move time. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();
