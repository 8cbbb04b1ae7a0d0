import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { parseConfig } from '../config/load-config.ts';
import { createLocalBus } from '../shared/bus.ts';
import { GatewayError } from '../core/gateway-error.ts';
import { StoreUnavailableError } from '../store/db.ts';
import type { AccountRecord, ApiKeyRecord } from '../core/records.ts';
import type { Store } from '../store/store.ts';
import { AccountsService } from './accounts-service.ts';
import { KeyCache, MAX_STALE_MS, STALE_RECHECK_MS } from './key-cache.ts';

const SECRET = 'tg-0123456789abcdef0123456789abcdef';
const key = {
  id: 'key_1',
  accountId: 'acct_1',
  status: 'active',
  allowedIps: null,
} as unknown as ApiKeyRecord;
const account = { id: 'acct_1', status: 'active' } as unknown as AccountRecord;

/** An accounts service over a store whose key lookup answers `lookup`, at a clock the test moves. */
function service(lookup: () => Promise<unknown>, cache: KeyCache, clock: { now: number }) {
  const store = { accounts: { keyWithAccount: lookup } } as unknown as Store;
  return new AccountsService({
    store,
    config: parseConfig({}, { TOLLGATE_ADMIN_KEY: 'tg-admin-key-cache-test-0123456789' }),
    clock: () => clock.now,
    mailer: { send: async () => {} },
    cache,
    bus: createLocalBus(),
    logger: pino({ level: 'silent' }),
    limiter: {} as never,
    holds: {} as never,
  });
}

describe('key cache through a database outage', () => {
  it('keeps an expired entry for stale use only, until MAX_STALE_MS past its lifetime', () => {
    const cache = new KeyCache({ ttlMs: 1_000 });
    cache.set(SECRET, key, account, 0);
    assert.equal(cache.get(SECRET, 999)?.key.id, 'key_1');
    assert.equal(cache.get(SECRET, 1_000), undefined);
    assert.equal(cache.stale(SECRET, 1_000)?.key.id, 'key_1');
    assert.equal(cache.get(SECRET, 1_000 + STALE_RECHECK_MS - 1)?.key.id, 'key_1', 'served again meanwhile');
    assert.equal(cache.get(SECRET, 1_000 + STALE_RECHECK_MS), undefined, 'then the database is asked again');
    assert.equal(cache.stale(SECRET, 1_000 + MAX_STALE_MS - 1)?.key.id, 'key_1');
    assert.equal(cache.get(SECRET, 1_000 + MAX_STALE_MS), undefined);
    assert.equal(cache.stale(SECRET, 1_000 + MAX_STALE_MS), undefined, 'counted from the first lifetime');
    cache.invalidate({ keyId: 'key_1' });
    assert.equal(cache.stale(SECRET, 1_001), undefined, 'an invalidation drops the stale entry too');
  });

  it('serves a known key past its lifetime while the database is unreachable, and only then', async () => {
    const cache = new KeyCache({ ttlMs: 1_000 });
    const clock = { now: 0 };
    let down = false;
    const accounts = service(
      async () => {
        if (down) throw new StoreUnavailableError(new Error('connect ECONNREFUSED'));
        return { key, account };
      },
      cache,
      clock,
    );
    assert.equal((await accounts.authenticate(SECRET, '127.0.0.1')).kind, 'user');
    down = true;
    clock.now = 5_000;
    const principal = await accounts.authenticate(SECRET, '127.0.0.1');
    assert.equal(principal.kind === 'user' && principal.key.id, 'key_1');
    await assert.rejects(
      accounts.authenticate('tg-ffffffffffffffffffffffffffffffff', '127.0.0.1'),
      StoreUnavailableError,
      'a key this instance never saw still needs the database',
    );
    clock.now = 1_000 + MAX_STALE_MS;
    await assert.rejects(accounts.authenticate(SECRET, '127.0.0.1'), StoreUnavailableError);
  });

  it('once served stale, a key is not held up by a lookup that hangs, and a lookup that answers refreshes it', async () => {
    const cache = new KeyCache({ ttlMs: 1_000 });
    const clock = { now: 0 };
    let answer: (found: unknown) => void = () => {};
    let mode: 'up' | 'refuse' | 'hang' = 'up';
    const accounts = service(
      async () => {
        if (mode === 'refuse') throw new StoreUnavailableError(new Error('connect ECONNREFUSED'));
        if (mode === 'hang') return new Promise((resolve) => (answer = resolve));
        return { key, account };
      },
      cache,
      clock,
    );
    await accounts.authenticate(SECRET, '127.0.0.1');
    mode = 'refuse';
    clock.now = 2_000;
    await accounts.authenticate(SECRET, '127.0.0.1');
    mode = 'hang';
    clock.now = 2_000 + STALE_RECHECK_MS;
    const served = await Promise.race([
      accounts.authenticate(SECRET, '127.0.0.1').then((p) => p.kind),
      new Promise((resolve) => setTimeout(() => resolve('held up'), 1_000)),
    ]);
    assert.equal(served, 'user');
    answer({ key, account: { ...account, status: 'suspended' } });
    await new Promise((resolve) => setImmediate(resolve));
    await assert.rejects(
      accounts.authenticate(SECRET, '127.0.0.1'),
      (error: unknown) => error instanceof GatewayError && error.code === 'forbidden',
      'the answer of the lookup replaced the stale entry',
    );
  });

  it('a revoked key stays refused from the stale entry', async () => {
    const cache = new KeyCache({ ttlMs: 1_000 });
    cache.set(SECRET, { ...key, status: 'revoked' }, account, 0);
    const accounts = service(
      async () => {
        throw new StoreUnavailableError(new Error('connect ECONNREFUSED'));
      },
      cache,
      { now: 2_000 },
    );
    await assert.rejects(
      accounts.authenticate(SECRET, '127.0.0.1'),
      (error: unknown) => error instanceof GatewayError && error.code === 'forbidden',
    );
  });
});
