import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { migrate } from '../store/migrate.ts';
import { newAccountRecord } from '../core/records.ts';
import { createStore, openDb } from '../store/store.ts';
import { createHoldBook } from './hold-book.ts';
import { settlementOf } from './testing.ts';

const NOW = Date.parse('2026-11-03T10:00:00Z');

async function embeddedStore() {
  const store = createStore(openDb('sqlite::memory:'));
  await migrate(store.db);
  await store.accounts.insert(newAccountRecord('acct_h', 'h@example.com', 'x', NOW));
  const grant = async (id: string, amountMicros: number, expiresAt: number) =>
    store.ledger.addGrant({
      id,
      accountId: 'acct_h',
      kind: 'admin',
      amountMicros,
      remainingMicros: amountMicros,
      expiresAt,
      createdAt: NOW,
      source: null,
    });
  return { store, grant };
}

describe('the in-process hold book (embedded store)', () => {
  it('sees credit added through the store at once, though it remembers balances', async () => {
    const { store, grant } = await embeddedStore();
    await grant('g1', 1_000, NOW + 86_400_000);
    const holds = createHoldBook(store);
    assert.equal(await holds.hold('r1', 'acct_h', 600, NOW, NOW + 1), true);
    assert.equal(await holds.hold('r2', 'acct_h', 600, NOW, NOW + 1), false, 'only 400 left');
    await grant('g2', 1_000, NOW + 86_400_000);
    assert.equal(await holds.hold('r3', 'acct_h', 600, NOW, NOW + 1), true, 'the new grant counts at once');
    await store.close();
  });

  it('stops counting a grant the moment it expires, with no write in between', async () => {
    const { store, grant } = await embeddedStore();
    await grant('short', 1_000, NOW + 60_000);
    const holds = createHoldBook(store);
    assert.equal(await holds.hold('a', 'acct_h', 100, NOW, NOW + 1), true);
    assert.equal(await holds.hold('b', 'acct_h', 100, NOW + 59_999, NOW + 60_000), true);
    assert.equal(await holds.hold('c', 'acct_h', 100, NOW + 60_000, NOW + 60_001), false, 'expired');
    await store.close();
  });

  it('gives a hold back only when its settlement has committed', async () => {
    const { store, grant } = await embeddedStore();
    await grant('g', 1_000, NOW + 86_400_000);
    const holds = createHoldBook(store);
    assert.equal(await holds.hold('x', 'acct_h', 1_000, NOW, NOW + 1), true);
    assert.equal(await holds.hold('y', 'acct_h', 1, NOW, NOW + 1), false);
    holds.settled(['x'], NOW);
    assert.equal(await holds.hold('y', 'acct_h', 1, NOW, NOW + 1), true);
    await store.close();
  });

  it('reads a charged account again as its settlement commits, so the next request needs no read', async () => {
    const { store, grant } = await embeddedStore();
    await grant('g', 1_000, NOW + 86_400_000);
    const readNow = store.db.readNow!.bind(store.db);
    let reads = 0;
    store.db.readNow = (sql, params) => {
      reads += 1;
      return readNow(sql, params);
    };
    const holds = createHoldBook(store);
    assert.equal(await holds.hold('x', 'acct_h', 600, NOW, NOW + 1), true);
    await store.ledger.settle([settlementOf('x', 'acct_h', 500, NOW)], { holdRows: false });
    holds.settled(['x'], NOW);
    const readsAfterSettling = reads;
    assert.equal(await holds.hold('y', 'acct_h', 500, NOW, NOW + 1), true, 'the 500 left after the charge');
    assert.equal(await holds.hold('z', 'acct_h', 1, NOW, NOW + 1), false, 'and no more');
    assert.equal(reads, readsAfterSettling, 'the requests after the settlement read nothing');
    await store.close();
  });
});
