import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { migrate } from '../store/migrate.ts';
import { newAccountRecord } from '../core/records.ts';
import { createStore, openDb } from '../store/store.ts';
import { createHoldBook } from './hold-book.ts';
import { settlementOf } from './testing.ts';

const NOW = Date.parse('2026-11-03T10:00:00Z');

describe('a key limit in the in-process hold book (embedded store)', () => {
  it('counts the key’s holds in flight and its charged spend since the period began', async () => {
    const store = createStore(openDb('sqlite::memory:'));
    await migrate(store.db);
    await store.accounts.insert(newAccountRecord('acct_k', 'k@example.com', 'x', NOW));
    await store.ledger.addGrant({
      id: 'g',
      accountId: 'acct_k',
      kind: 'admin',
      amountMicros: 1_000_000,
      remainingMicros: 1_000_000,
      expiresAt: NOW + 86_400_000,
      createdAt: NOW,
      source: null,
    });
    const holds = createHoldBook(store);
    const today = { keyId: 'k', limitMicros: 1_000, fromDay: '2026-11-03' };
    assert.equal(await holds.hold('a', 'acct_k', 600, NOW, NOW + 1, today), true);
    assert.equal(
      await holds.hold('b', 'acct_k', 600, NOW, NOW + 1, today),
      false,
      'only 400 of the limit left',
    );
    assert.equal(await holds.hold('c', 'acct_k', 600, NOW, NOW + 1), true, 'the account itself has room');
    assert.equal(holds.keyHeldMicros?.('k'), 600);
    await store.ledger.settle([settlementOf('a', 'acct_k', 500, NOW)], { holdRows: false });
    holds.settled(['a'], NOW);
    assert.equal(holds.keyHeldMicros?.('k'), 0);
    assert.equal(await holds.hold('d', 'acct_k', 501, NOW, NOW + 1, today), false, '500 spent: 500 left');
    assert.equal(await holds.hold('e', 'acct_k', 500, NOW, NOW + 1, today), true);
    const tomorrow = { ...today, fromDay: '2026-11-04' };
    assert.equal(
      await holds.hold('f', 'acct_k', 500, NOW + 86_400_000 - 1, NOW, tomorrow),
      true,
      'a new period does not count the spend before it (only the 500 in flight)',
    );
    await store.close();
  });
});
