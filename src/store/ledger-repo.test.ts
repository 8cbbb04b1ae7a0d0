import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ledgerRepoCases } from './ledger-repo.cases.ts';
import { migrate } from './migrate.ts';
import { openDb } from './store.ts';
import { toBalance, utcDay } from './ledger-repo.ts';

// The ledger's cases on SQLite in memory (a new database per case); the same cases run on PostgreSQL in
// test/ledger-repo-postgres.test.ts.
ledgerRepoCases({
  name: 'sqlite',
  async fresh() {
    const db = openDb('sqlite::memory:');
    await migrate(db);
    return db;
  },
});

describe('utcDay and toBalance', () => {
  it('formats the UTC calendar day', () => {
    assert.equal(utcDay(Date.parse('2026-11-03T23:59:59.999Z')), '2026-11-03');
    assert.equal(utcDay(Date.parse('2026-11-04T00:00:00.000Z')), '2026-11-04');
    assert.equal(utcDay(Date.parse('2026-11-03T12:00:00Z')), '2026-11-03');
    assert.equal(utcDay(0), '1970-01-01');
  });

  it('available = credit − held − debt + credit limit; nothing for an unknown account', () => {
    assert.deepEqual(toBalance({ credit: 1000, next_expiry: null, held: 100, debt: 50, credit_limit: 500 }), {
      creditMicros: 1000,
      heldMicros: 100,
      debtMicros: 50,
      creditLimitMicros: 500,
      availableMicros: 1350,
    });
    assert.deepEqual(toBalance(undefined), {
      creditMicros: 0,
      heldMicros: 0,
      debtMicros: 0,
      creditLimitMicros: 0,
      availableMicros: 0,
    });
    assert.equal(
      toBalance({ credit: null, next_expiry: null, held: 0, debt: 0, credit_limit: 0 }).creditMicros,
      0,
    );
  });
});
