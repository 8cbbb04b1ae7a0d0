import { createHash, randomBytes } from 'node:crypto';

export interface NewSecret {
  /** Shown to the user once, never stored. */
  secret: string;
  /** What lists show: enough to recognise the key, too little to use it. */
  prefix: string;
  /** SHA-256 of the secret: what is stored and looked up. */
  hash: string;
}

const KEY_PREFIX = 'tg-';

/** Hashes a presented secret for lookup; equal hashes are found by the index, never compared in user code. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** A new API key secret: `tg-` and 32 random bytes, URL-safe. */
export function createSecret(prefix: string = KEY_PREFIX): NewSecret {
  const secret = `${prefix}${randomBytes(32).toString('base64url')}`;
  return { secret, prefix: `${secret.slice(0, prefix.length + 6)}…`, hash: hashSecret(secret) };
}

/** Whether a string could be one of our secrets at all (saves a lookup for obvious garbage). */
export function isPlausibleSecret(secret: string): boolean {
  return secret.length >= 20 && secret.length <= 200;
}
