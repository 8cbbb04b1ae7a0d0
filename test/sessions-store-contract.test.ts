import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newAccountRecord } from '../src/core/records.ts';
import type { SessionRecord } from '../src/store/sessions-repo.ts';
import { createStore, type Store } from '../src/store/store.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';

const NOW = Date.parse('2026-11-10T12:00:00Z');

const session = (id: string, accountId: string, overrides: Partial<SessionRecord> = {}): SessionRecord => ({
  id,
  tokenHash: `hash_${id}`,
  accountId,
  csrfToken: `csrf_${id}`,
  createdAt: NOW,
  lastSeenAt: NOW,
  expiresAt: NOW + 7 * 86_400_000,
  ...overrides,
});

for (const backend of BACKENDS) {
  const skip = await backend.unavailable();
  describe(`the sessions store contract on ${backend.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let store: Store;
    before(async () => {
      opened = await backend.open();
      store = createStore(opened.db);
      for (const id of ['a1', 'a2'])
        await store.accounts.insert(newAccountRecord(id, `${id}@example.com`, 'scrypt$old', NOW));
    });
    after(async () => opened?.cleanup());

    it('a session is found by its hash while neither idle nor past its absolute expiry', async () => {
      await store.sessions.insert(session('s1', 'a1', { expiresAt: NOW + 10_000 }));
      assert.deepEqual(
        await store.sessions.live('hash_s1', NOW, NOW - 5_000),
        session('s1', 'a1', { expiresAt: NOW + 10_000 }),
      );
      assert.equal(await store.sessions.live('hash_nope', NOW, NOW - 5_000), undefined);
      assert.equal(await store.sessions.live('hash_s1', NOW + 10_000, NOW), undefined, 'absolute expiry');
      assert.equal(await store.sessions.live('hash_s1', NOW + 6_000, NOW + 1), undefined, 'idle expiry');
      await store.sessions.touch('s1', NOW + 4_000);
      assert.equal((await store.sessions.live('hash_s1', NOW + 6_000, NOW + 1))?.lastSeenAt, NOW + 4_000);
    });

    it('sessions end one at a time, all but one, or all; expired ones are swept', async () => {
      for (const id of ['k1', 'k2', 'k3']) await store.sessions.insert(session(id, 'a2'));
      assert.equal(await store.sessions.delete('k1'), true);
      assert.equal(await store.sessions.delete('k1'), false);
      assert.equal(await store.sessions.deleteForAccount('a2', 'k2'), 1);
      assert.equal(await store.sessions.countForAccount('a2'), 1);
      assert.equal(await store.sessions.deleteForAccount('a2'), 1);
      assert.equal(await store.sessions.countForAccount('a2'), 0);
      await store.sessions.insert(session('old', 'a2', { lastSeenAt: NOW - 100 }));
      await store.sessions.insert(session('new', 'a2'));
      assert.equal(await store.sessions.deleteExpired(NOW, NOW - 50), 1);
      assert.equal(await store.sessions.countForAccount('a2'), 1);
    });

    it('a reset token is used once, not after it expires, and a reset voids the rest', async () => {
      await store.sessions.insertResetToken('r1', 'a1', NOW + 1000);
      await store.sessions.insertResetToken('r2', 'a1', NOW + 1000);
      await store.sessions.insertResetToken('r3', 'a1', NOW + 1000);
      assert.deepEqual(await store.sessions.consumeResetToken('r1', NOW), { accountId: 'a1' });
      assert.equal(await store.sessions.consumeResetToken('r1', NOW), 'used');
      assert.equal(await store.sessions.consumeResetToken('r2', NOW + 1000), 'expired');
      assert.equal(await store.sessions.consumeResetToken('nope', NOW), 'unknown');
      await store.sessions.voidResetTokens('a1', NOW);
      assert.equal(await store.sessions.consumeResetToken('r3', NOW), 'used');
      await store.sessions.insertResetToken('r4', 'a1', NOW + 1000);
      const twice = await Promise.all([
        store.sessions.consumeResetToken('r4', NOW),
        store.sessions.consumeResetToken('r4', NOW),
      ]);
      assert.equal(twice.filter((result) => typeof result === 'object').length, 1, 'used once when raced');
    });

    it('the password hash changes in place', async () => {
      assert.equal(await store.sessions.setPasswordHash('a1', 'scrypt$new'), true);
      assert.equal((await store.accounts.byId('a1'))?.passwordHash, 'scrypt$new');
      assert.equal(await store.sessions.setPasswordHash('nobody', 'scrypt$new'), false);
    });
  });
}
