import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, mock } from 'node:test';
import { pino } from 'pino';
import { migrate } from '../store/migrate.ts';
import { newAccountRecord, type Settlement } from '../core/records.ts';
import { createStore, openDb } from '../store/store.ts';
import { SettlementQueue } from './settlement-queue.ts';
import { settlementOf } from './testing.ts';

const silent = pino({ level: 'silent' });

describe('the settlement queue', () => {
  it('spools what the database refuses at shutdown, and the next start applies it once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-spool-'));
    const spool = join(dir, 'settlements-spool.jsonl');
    try {
      const now = Date.now();
      const setup = createStore(openDb(`sqlite:${join(dir, 'a.db')}`));
      await migrate(setup.db);
      await setup.accounts.insert(newAccountRecord('acct_s', 's@example.com', 'x', now));
      await setup.ledger.addGrant({
        id: 'g',
        accountId: 'acct_s',
        kind: 'admin',
        amountMicros: 1000,
        remainingMicros: 1000,
        expiresAt: now + 60_000,
        createdAt: now,
        source: null,
      });
      await setup.close();

      // A store whose database is gone: every batch fails, so closing spools the queue.
      const broken = createStore(openDb(`sqlite:${join(dir, 'a.db')}`));
      await broken.close();
      const settlement = (id: string): Settlement => settlementOf(id, 'acct_s', 100, now);
      const failing = new SettlementQueue(broken.ledger, silent, { spoolPath: spool });
      failing.add(settlement('r1'));
      failing.add(settlement('r2'));
      await failing.close();
      assert.ok(existsSync(spool), 'the refused settlements are on disk');

      const store = createStore(openDb(`sqlite:${join(dir, 'a.db')}`));
      const queue = new SettlementQueue(store.ledger, silent, { spoolPath: spool });
      assert.equal(await queue.replaySpool(), 2);
      assert.ok(!existsSync(spool) && !existsSync(`${spool}.replaying`), 'the spool is gone once applied');
      assert.equal(await store.usage.recordCount('acct_s'), 2);
      assert.equal((await store.ledger.balance('acct_s', now)).creditMicros, 800);
      assert.equal(await queue.replaySpool(), 0);
      await queue.close();
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gathers settlements that finish within its window into one transaction', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-window-'));
    // The window is the test's to advance: a loaded machine cannot make it end early or late.
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const now = Date.now();
      const store = createStore(openDb(`sqlite:${join(dir, 'w.db')}`));
      await migrate(store.db);
      await store.accounts.insert(newAccountRecord('acct_w', 'w@example.com', 'x', now));
      const queue = new SettlementQueue(store.ledger, silent, { holdRows: false, windowMs: 50 });
      const batches: number[] = [];
      queue.onSettled = (batch) => batches.push(batch.length);
      for (let i = 0; i < 5; i++) {
        queue.add(settlementOf(`w${i}`, 'acct_w', 0, now));
        await new Promise((resolve) => setImmediate(resolve));
      }
      mock.timers.tick(49);
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(batches, [], 'nothing commits before the window ends');
      assert.equal(queue.pending, 5);
      mock.timers.tick(1);
      for (let i = 0; i < 100 && batches.length === 0; i++)
        await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(batches, [5], 'one transaction for the five, when the window ends');
      assert.equal(await store.usage.recordCount('acct_w'), 5);
      await queue.close();
      await store.close();
    } finally {
      mock.timers.reset();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
