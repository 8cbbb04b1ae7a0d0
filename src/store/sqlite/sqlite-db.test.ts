import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSqliteDb } from './sqlite-db.ts';

async function table() {
  const db = createSqliteDb(':memory:');
  await db.run('CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)');
  await db.run('INSERT INTO t (id, v) VALUES (1, 10)');
  return db;
}

describe('the embedded database’s change counter (what the hold book’s remembered balances rest on)', () => {
  it('stands still for reads and for writes that changed no row, such as an idle queue poll', async () => {
    const db = await table();
    const before = db.writes;
    await db.get('SELECT v FROM t WHERE id = $1', [1]);
    await db.all('SELECT v FROM t');
    await db.all('UPDATE t SET v = v + 1 WHERE id IN (SELECT id FROM t WHERE v > 100) RETURNING id');
    assert.equal(await db.run('DELETE FROM t WHERE id = $1', [2]), 0);
    await db.transaction(async (tx) => tx.get('SELECT v FROM t'));
    assert.equal(db.writes, before);
    await db.close();
  });

  it('moves for every statement and transaction that changed a row, a rolled-back one too', async () => {
    const db = await table();
    let last = db.writes;
    const moved = (what: string): void => {
      assert.notEqual(db.writes, last, what);
      last = db.writes;
    };
    await db.run('UPDATE t SET v = 11 WHERE id = 1');
    moved('run');
    await db.all('UPDATE t SET v = 12 WHERE id = 1 RETURNING id');
    moved('all');
    await db.get('INSERT INTO t (id, v) VALUES (2, 1) RETURNING id');
    moved('get');
    await db.transaction(async (tx) => tx.run('UPDATE t SET v = 13 WHERE id = 1'));
    moved('a committed transaction');
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.run('UPDATE t SET v = 14 WHERE id = 1');
        throw new Error('rolled back');
      }),
    );
    moved('a rolled-back transaction (what was read inside it is stale)');
    await db.close();
  });
});
