import { newId } from '../core/ids.ts';
import { type KeyControls, NO_KEY_CONTROLS } from '../core/records.ts';
import type { Store } from '../store/store.ts';
import { createSecret } from './api-key-secret.ts';
import { presentKeyControls } from './key-controls.ts';

export interface IssuedKey {
  id: string;
  name: string;
  prefix: string;
  /** The secret: returned once, at creation or rotation. */
  key: string;
  allowed_ips: string[] | null;
  created_at: string;
  /** Per-key controls, as `GET /api/keys` shows them. */
  limit_usd: number | null;
  limit_period: string | null;
  expires_at: string | null;
  allowed_models: string[] | null;
}

/** What a new key is: whose, named how, with which rules. */
export interface NewKey {
  accountId: string;
  name: string;
  allowedIps: string[] | null;
  controls?: KeyControls;
  /** The revoked key whose rate-limit windows the new key takes over. */
  limitSubject?: string | undefined;
  /** The member the key belongs to, for the member's limit and allowed models. */
  memberId?: string | undefined;
}

/** Stores a fresh key in `store` (a transaction's or the store) and answers it with its secret, once. */
export async function insertKey(store: Store, key: NewKey, now: number): Promise<IssuedKey> {
  const fresh = createSecret();
  const id = newId('key');
  const controls = key.controls ?? NO_KEY_CONTROLS;
  await store.accounts.insertKey({
    id,
    accountId: key.accountId,
    name: key.name,
    prefix: fresh.prefix,
    secretHash: fresh.hash,
    allowedIps: key.allowedIps,
    status: 'active',
    createdAt: now,
    revokedAt: null,
    controls,
    ...(key.limitSubject === undefined ? {} : { limitSubject: key.limitSubject }),
    ...(key.memberId === undefined ? {} : { memberId: key.memberId }),
  });
  return issued(id, key.name, fresh.secret, fresh.prefix, key.allowedIps, now, controls);
}

/** A key as its holder sees it with its secret. */
export function issued(
  id: string,
  name: string,
  key: string,
  prefix: string,
  allowedIps: string[] | null,
  createdAt: number,
  controls: KeyControls,
): IssuedKey {
  return {
    id,
    name,
    prefix,
    key,
    allowed_ips: allowedIps,
    created_at: new Date(createdAt).toISOString(),
    ...presentKeyControls(controls),
  };
}
