// The ledger's tests, written once and run on each engine: SQLite (in memory) in the unit tier beside the
// code (src/store/ledger-repo.test.ts), PostgreSQL in test/ledger-repo-postgres.test.ts. PostgreSQL settles a
// batch in a few multi-row statements (settleBatch, chargeAll) where SQLite settles row by row, so both must
// give the same answers (docs/testing.md, "Mutation testing").
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Db } from './db.ts';
import { newAccountRecord, type Settlement } from '../core/records.ts';
import { createStore } from './store.ts';
import { LedgerRepo, utcDay } from './ledger-repo.ts';

/** Where the cases run: `fresh()` gives a migrated database with no rows in the ledger's tables. */
export interface LedgerEngine {
  name: 'sqlite' | 'postgres';
  fresh(): Promise<Db>;
}

const NOW = Date.parse('2026-11-03T10:00:00Z');
const DAY = 86_400_000;

const settlement = (requestId: string, costMicros: number, over: Partial<Settlement> = {}): Settlement => ({
  requestId,
  accountId: 'acct_a',
  keyId: 'key_1',
  model: 'model-b',
  deployment: 'sim/model-b',
  promptTokens: 10,
  completionTokens: 5,
  estimated: false,
  costMicros,
  status: 'ok',
  latencyMs: 12.6,
  ttftMs: 3.4,
  createdAt: NOW,
  ...over,
});

/** Defines the ledger's test cases (node:test `describe`/`it`) against one engine. */
export function ledgerRepoCases(engine: LedgerEngine): void {
  async function ledger() {
    const store = createStore(await engine.fresh());
    await store.accounts.insert(newAccountRecord('acct_a', 'a@example.com', 'x', NOW));
    await store.accounts.insert(newAccountRecord('acct_b', 'b@example.com', 'x', NOW));
    const grant = (
      id: string,
      amountMicros: number,
      expiresAt: number,
      accountId = 'acct_a',
      createdAt = NOW,
    ) =>
      store.ledger.addGrant({
        id,
        accountId,
        kind: 'admin',
        amountMicros,
        remainingMicros: amountMicros,
        expiresAt,
        createdAt,
        source: 'src-1',
      });
    const remaining = async (id: string) =>
      Number(
        (
          await store.db.get<{ r: number }>('SELECT remaining_micros AS r FROM credit_grants WHERE id = $1', [
            id,
          ])
        )?.r,
      );
    const account = async (id = 'acct_a') =>
      (await store.db.get<{ held: number; debt: number; last: number | null }>(
        'SELECT held_micros AS held, debt_micros AS debt, last_active_at AS last FROM accounts WHERE id = $1',
        [id],
      ))!;
    const daily = async () =>
      store.db.all<Record<string, unknown>>(
        'SELECT * FROM usage_daily ORDER BY day, account_id, key_id, model',
      );
    return { store, ledger: store.ledger, grant, remaining, account, daily };
  }

  describe('LedgerRepo: grants and balance', () => {
    it('counts unexpired credit only, soonest expiry first', async () => {
      const { ledger, grant } = await ledger_();
      await grant('g_late', 300, NOW + 2 * DAY);
      await grant('g_soon', 200, NOW + DAY);
      await grant('g_gone', 999, NOW);
      const live = await ledger.liveGrants('acct_a', NOW);
      assert.deepEqual(
        live.map((g) => g.id),
        ['g_soon', 'g_late'],
      );
      assert.deepEqual(live[0], {
        id: 'g_soon',
        accountId: 'acct_a',
        kind: 'admin',
        amountMicros: 200,
        remainingMicros: 200,
        expiresAt: NOW + DAY,
        createdAt: NOW,
        source: 'src-1',
      });
      const balance = await ledger.balance('acct_a', NOW);
      assert.equal(balance.creditMicros, 500);
      assert.equal(balance.availableMicros, 500);
      assert.equal((await ledger.balance('acct_a', NOW + DAY)).creditMicros, 300);
      assert.equal((await ledger.balance('acct_b', NOW)).creditMicros, 0);
    });
  });

  const ledger_ = ledger;

  describe('LedgerRepo: holds', () => {
    it('holds up to exactly what is available, and no more', async () => {
      const { ledger, grant, account } = await ledger_();
      await grant('g', 1000, NOW + DAY);
      assert.equal(await ledger.hold('r1', 'acct_a', 600, NOW, NOW + 1000), true);
      assert.equal((await account()).held, 600);
      assert.equal(await ledger.hold('r2', 'acct_a', 401, NOW, NOW + 1000), false);
      assert.equal((await account()).held, 600, 'a refused hold takes nothing');
      assert.equal(await ledger.hold('r3', 'acct_a', 400, NOW, NOW + 1000), true);
      assert.equal((await ledger.balance('acct_a', NOW)).availableMicros, 0);
      assert.equal(
        await ledger.hold('r4', 'acct_a', 0, NOW, NOW + 1000),
        false,
        'nothing available: not even 0',
      );
      assert.equal(await ledger.hold('r5', 'nobody', 1, NOW, NOW + 1000), false);
    });

    it("a key's spending limit caps its holds, below what the account has available", async () => {
      const { ledger, grant, account } = await ledger_();
      await grant('g', 1000, NOW + DAY);
      const key = { keyId: 'key_a', limitMicros: 500, fromDay: utcDay(NOW) };
      assert.equal(await ledger.hold('k1', 'acct_a', 300, NOW, NOW + 1000, key), true);
      assert.equal(await ledger.hold('k2', 'acct_a', 201, NOW, NOW + 1000, key), false, 'over the key limit');
      assert.equal((await account()).held, 300, 'a refused hold takes nothing');
      assert.equal(await ledger.hold('k3', 'acct_a', 200, NOW, NOW + 1000, key), true, 'exactly the limit');
      assert.equal(await ledger.hold('k4', 'acct_a', 400, NOW, NOW + 1000), true, 'another key has the rest');
    });

    it('expired credit does not count; a credit limit does', async () => {
      const { store, ledger, grant } = await ledger_();
      await grant('g', 1000, NOW);
      assert.equal(await ledger.hold('r1', 'acct_a', 1, NOW, NOW + 1000), false);
      await store.db.run('UPDATE accounts SET credit_limit_micros = 500 WHERE id = $1', ['acct_a']);
      assert.equal(await ledger.hold('r2', 'acct_a', 500, NOW, NOW + 1000), true);
      assert.equal(await ledger.hold('r3', 'acct_a', 1, NOW, NOW + 1000), false);
    });

    it('releases expired holds only, and gives their amounts back', async () => {
      const { ledger, grant, account } = await ledger_();
      await grant('g', 1000, NOW + DAY);
      await ledger.hold('r1', 'acct_a', 100, NOW, NOW + 1000);
      await ledger.hold('r2', 'acct_a', 200, NOW, NOW + 2000);
      assert.equal(await ledger.releaseExpiredHolds(NOW + 999), 0);
      assert.equal(await ledger.releaseExpiredHolds(NOW + 1000), 1);
      assert.equal((await account()).held, 200);
      assert.equal(await ledger.releaseExpiredHolds(NOW + 5000), 1);
      assert.equal((await account()).held, 0);
    });
  });

  describe('LedgerRepo: settlement', () => {
    it('records each request, releases its hold, charges the soonest-expiring grant first', async () => {
      const { store, ledger, grant, remaining, account, daily } = await ledger_();
      await grant('g_late', 1000, NOW + 2 * DAY);
      await grant('g_soon', 100, NOW + DAY);
      await ledger.hold('r1', 'acct_a', 500, NOW, NOW + 1000);
      await ledger.settle([settlement('r1', 150)]);
      assert.equal(await remaining('g_soon'), 0);
      assert.equal(await remaining('g_late'), 950);
      assert.equal((await account()).held, 0);
      assert.equal((await account()).last, NOW);
      const record = await store.usage.record('r1');
      assert.equal(record?.['cost_micros'], 150);
      assert.equal(record?.['uncollected_micros'] ?? 0, 0);
      assert.equal(record?.['prompt_tokens'], 10);
      assert.equal(record?.['completion_tokens'], 5);
      assert.equal(record?.['latency_ms'], 13);
      assert.equal(record?.['ttft_ms'], 3);
      assert.equal(record?.['estimated'], 0);
      assert.equal(record?.['status'], 'ok');
      assert.equal(record?.['deployment'], 'sim/model-b');
      assert.equal(record?.['key_id'], 'key_1');
      assert.deepEqual(
        (await daily()).map((row) => ({ ...row })),
        [
          {
            day: '2026-11-03',
            account_id: 'acct_a',
            key_id: 'key_1',
            model: 'model-b',
            requests: 1,
            prompt_tokens: 10,
            completion_tokens: 5,
            cost_micros: 150,
            cached_input_tokens: 0,
            cache_write_tokens: 0,
            cache_write_1h_tokens: 0,
            reasoning_tokens: 0,
          },
        ],
      );
    });

    it('records the kinds of each request and sums them in the daily rollup', async () => {
      const { ledger, grant, daily, store } = await ledger_();
      await grant('g', 10_000, NOW + DAY);
      const kinds = { cachedInputTokens: 6, cacheWriteTokens: 3, cacheWrite1hTokens: 1, reasoningTokens: 4 };
      await ledger.settle([
        settlement('r1', 100, kinds),
        settlement('r2', 50, { ...kinds, cachedInputTokens: 2, reasoningTokens: 0 }),
      ]);
      const record = await store.usage.record('r1');
      assert.deepEqual(
        [
          record?.['cached_input_tokens'],
          record?.['cache_write_tokens'],
          record?.['cache_write_1h_tokens'],
          record?.['reasoning_tokens'],
        ].map(Number),
        [6, 3, 1, 4],
      );
      const row = (await daily())[0]!;
      assert.deepEqual(
        [
          row['cached_input_tokens'],
          row['cache_write_tokens'],
          row['cache_write_1h_tokens'],
          row['reasoning_tokens'],
        ].map(Number),
        [8, 6, 2, 4],
      );
    });

    it('a request id settled twice charges once', async () => {
      const { ledger, grant, remaining, daily } = await ledger_();
      await grant('g', 1000, NOW + DAY);
      await ledger.settle([settlement('r1', 100)]);
      await ledger.settle([settlement('r1', 100), settlement('r2', 50)]);
      assert.equal(await remaining('g'), 850);
      assert.equal((await daily())[0]?.['requests'], 2);
      assert.equal((await daily())[0]?.['cost_micros'], 150);
      await ledger.settle([]);
    });

    it('sums a batch per account and per (day, key, model) rollup', async () => {
      const { ledger, grant, remaining, daily } = await ledger_();
      await grant('ga', 1000, NOW + 3 * DAY);
      await grant('gb', 1000, NOW + 3 * DAY, 'acct_b');
      await ledger.settle([
        settlement('b1', 30, { accountId: 'acct_b' }),
        settlement('a1', 10),
        settlement('a2', 20, { model: 'model-c' }),
        settlement('a3', 40, { createdAt: NOW + DAY, estimated: true, ttftMs: null }),
        settlement('a4', 5, { keyId: 'key_2' }),
        settlement('a5', 7),
      ]);
      assert.equal(await remaining('ga'), 1000 - 82);
      assert.equal(await remaining('gb'), 970);
      const rows = await daily();
      assert.deepEqual(
        rows.map((r) => [
          r['day'],
          r['account_id'],
          r['key_id'],
          r['model'],
          r['requests'],
          r['prompt_tokens'],
          r['completion_tokens'],
          r['cost_micros'],
        ]),
        [
          ['2026-11-03', 'acct_a', 'key_1', 'model-b', 2, 20, 10, 17],
          ['2026-11-03', 'acct_a', 'key_1', 'model-c', 1, 10, 5, 20],
          ['2026-11-03', 'acct_a', 'key_2', 'model-b', 1, 10, 5, 5],
          ['2026-11-03', 'acct_b', 'key_1', 'model-b', 1, 10, 5, 30],
          ['2026-11-04', 'acct_a', 'key_1', 'model-b', 1, 10, 5, 40],
        ],
      );
    });

    it('a prepaid account is never charged beyond its credit: the shortfall is written off on the latest requests', async () => {
      const { store, ledger, grant, remaining, account, daily } = await ledger_();
      await grant('g', 100, NOW + DAY);
      await ledger.settle([
        settlement('r1', 60),
        settlement('r2', 30, { createdAt: NOW + 1 }),
        settlement('r3', 0, { createdAt: NOW + 2 }),
        settlement('r4', 50, { createdAt: NOW + 3 }),
      ]);
      assert.equal(await remaining('g'), 0);
      assert.equal((await account()).debt, 0);
      const uncollected = async (id: string) =>
        Number((await store.usage.record(id))?.['uncollected_micros'] ?? 0);
      assert.equal(
        await uncollected('r4'),
        40,
        'short 40: all of it on the latest request that cost something',
      );
      assert.equal(await uncollected('r3'), 0);
      assert.equal(await uncollected('r2'), 0);
      assert.equal(await uncollected('r1'), 0);
      assert.equal((await daily())[0]?.['cost_micros'], 100, 'the rollup counts what was collected');
      await ledger.settle([
        settlement('r5', 30, { createdAt: NOW + 4 }),
        settlement('r6', 20, { createdAt: NOW + 5 }),
      ]);
      assert.equal(await uncollected('r6'), 20);
      assert.equal(await uncollected('r5'), 30);
    });

    it('a shortfall larger than the latest request spreads back over earlier ones', async () => {
      const { store, ledger, grant } = await ledger_();
      await grant('g', 10, NOW + DAY);
      await ledger.settle([settlement('r1', 30), settlement('r2', 20, { createdAt: NOW + 1 })]);
      const uncollected = async (id: string) =>
        Number((await store.usage.record(id))?.['uncollected_micros'] ?? 0);
      assert.equal(await uncollected('r2'), 20);
      assert.equal(await uncollected('r1'), 20);
    });

    it('a postpaid account (credit limit) takes what credit cannot cover as debt', async () => {
      const { store, ledger, grant, remaining, account } = await ledger_();
      await store.db.run('UPDATE accounts SET credit_limit_micros = 1000 WHERE id = $1', ['acct_a']);
      await grant('g', 100, NOW + DAY);
      await ledger.settle([settlement('r1', 250)]);
      assert.equal(await remaining('g'), 0);
      assert.equal((await account()).debt, 150);
      assert.equal(Number((await store.usage.record('r1'))?.['uncollected_micros'] ?? 0), 0);
      assert.equal((await ledger.balance('acct_a', NOW)).availableMicros, 850);
    });

    it('expired grants are not drawn; a grant with nothing left is skipped', async () => {
      const { ledger, grant, remaining } = await ledger_();
      await grant('g_old', 500, NOW - 1);
      await grant('g_empty', 0, NOW + DAY);
      await grant('g_ok', 500, NOW + 2 * DAY);
      await ledger.settle([settlement('r1', 100)]);
      assert.equal(await remaining('g_old'), 500);
      assert.equal(await remaining('g_ok'), 400);
    });

    it('last_active_at moves forward on answered requests only', async () => {
      const { ledger, grant, account } = await ledger_();
      await grant('g', 1000, NOW + DAY);
      await ledger.settle([
        settlement('r1', 1, { createdAt: NOW + 50 }),
        settlement('r2', 1, { createdAt: NOW + 90, status: 'error' }),
      ]);
      assert.equal((await account()).last, NOW + 50);
      await ledger.settle([settlement('r3', 1, { createdAt: NOW + 10 })]);
      assert.equal((await account()).last, NOW + 50, 'an older request does not move it back');
      await ledger.settle([settlement('r4', 1, { createdAt: NOW + 100, status: 'cancelled' })]);
      assert.equal((await account()).last, NOW + 50);
    });

    it('debt reduces what a postpaid account may hold', async () => {
      const { store, ledger, grant, account } = await ledger_();
      await store.db.run('UPDATE accounts SET credit_limit_micros = 500 WHERE id = $1', ['acct_a']);
      await grant('g', 100, NOW + DAY);
      await ledger.settle([settlement('r1', 250)]);
      assert.equal((await account()).debt, 150);
      assert.equal(
        await ledger.hold('h1', 'acct_a', 351, NOW, NOW + 1000),
        false,
        '500 − 150 = 350 available',
      );
      assert.equal(await ledger.hold('h2', 'acct_a', 350, NOW, NOW + 1000), true);
    });

    it('an account with only failed requests stays never-active', async () => {
      const { ledger, grant, account } = await ledger_();
      await grant('g', 1000, NOW + DAY);
      await ledger.settle([settlement('r1', 0, { status: 'error' })]);
      assert.equal((await account()).last, null);
    });

    it('keeps the hold rows when asked to (the embedded hold book)', async () => {
      const { ledger, grant, account } = await ledger_();
      await grant('g', 1000, NOW + DAY);
      await ledger.hold('r1', 'acct_a', 300, NOW, NOW + 1000);
      await ledger.settle([settlement('r1', 100)], { holdRows: false });
      assert.equal((await account()).held, 300);
      await ledger.settle([settlement('r2', 100)]);
      assert.equal((await account()).held, 300, 'r2 had no hold: nothing else released');
    });

    it('settles accounts in a fixed order whatever the batch order', async () => {
      const { ledger, grant, remaining } = await ledger_();
      await grant('ga', 100, NOW + DAY);
      await grant('gb', 100, NOW + DAY, 'acct_b');
      await ledger.settle([
        settlement('b', 10, { accountId: 'acct_b' }),
        settlement('a', 20),
        settlement('b2', 1, { accountId: 'acct_b' }),
      ]);
      assert.equal(await remaining('ga'), 80);
      assert.equal(await remaining('gb'), 89);
    });
  });

  describe('LedgerRepo: what a settlement returns, versions and the balance read with them', () => {
    it("returns each account's new ledger version and what it was charged, per key and UTC day", async () => {
      const { ledger, grant } = await ledger_();
      await grant('ga', 100, NOW + 3 * DAY);
      await grant('gb', 1000, NOW + 3 * DAY, 'acct_b');
      const versionA = (await ledger.versionedBalance('acct_a', NOW))!.version;
      const versionB = (await ledger.versionedBalance('acct_b', NOW))!.version;
      const settled = await ledger.settle([
        settlement('a1', 30),
        settlement('b1', 7, { accountId: 'acct_b' }),
        settlement('a2', 20, { keyId: 'key_2' }),
        settlement('a3', 40, { createdAt: NOW + DAY }),
        // 140 due against 100 of credit: the 40 short is written off on the latest request, a4.
        settlement('a4', 50, { createdAt: NOW + DAY + 1 }),
      ]);
      assert.equal(settled.size, 2);
      assert.deepEqual(settled.get('acct_a'), {
        version: versionA + 1,
        chargedMicros: 100,
        keys: [
          { keyId: 'key_1', day: '2026-11-03', micros: 30 },
          { keyId: 'key_2', day: '2026-11-03', micros: 20 },
          { keyId: 'key_1', day: '2026-11-04', micros: 50 },
        ],
      });
      assert.deepEqual(settled.get('acct_b'), {
        version: versionB + 1,
        chargedMicros: 7,
        keys: [{ keyId: 'key_1', day: '2026-11-03', micros: 7 }],
      });
      // Settled before (a retried batch whose commit went unacknowledged): nothing charged, the version as read.
      assert.deepEqual(
        [...(await ledger.settle([settlement('a1', 30)]))],
        [['acct_a', { version: versionA + 1, chargedMicros: 0, keys: [], replayed: true }]],
        'settled before: nothing charged',
      );
      const again = await ledger.settle([settlement('a5', 0, { status: 'error' })]);
      assert.deepEqual(again.get('acct_a'), {
        version: versionA + 2,
        chargedMicros: 0,
        keys: [{ keyId: 'key_1', day: '2026-11-03', micros: 0 }],
      });
    });

    it('reads the spendable balance, when it goes stale and the key spend since a day, in one snapshot', async () => {
      const { store, ledger, grant } = await ledger_();
      assert.equal(await ledger.versionedBalance('nobody', NOW), undefined);
      await grant('g_empty', 0, NOW + DAY / 2);
      await grant('g_soon', 1000, NOW + DAY);
      await grant('g_late', 500, NOW + 2 * DAY);
      await store.db.run('UPDATE accounts SET credit_limit_micros = 200 WHERE id = $1', ['acct_a']);
      await ledger.hold('h1', 'acct_a', 100, NOW, NOW + 1000);
      const key = { keyId: 'key_1', fromDay: utcDay(NOW) };
      const first = (await ledger.versionedBalance('acct_a', NOW, key))!;
      assert.deepEqual(first, {
        version: first.version,
        availableMicros: 1500 - 100 + 200,
        until: NOW + DAY,
        keySpentMicros: 0,
      });
      await ledger.settle([
        settlement('r1', 30),
        settlement('r2', 12, { createdAt: NOW - DAY }),
        settlement('r3', 5, { keyId: 'key_2' }),
      ]);
      assert.deepEqual(await ledger.versionedBalance('acct_a', NOW, key), {
        version: first.version + 1,
        availableMicros: 1500 - 47 - 100 + 200,
        until: NOW + DAY,
        keySpentMicros: 30,
      });
      assert.equal((await ledger.versionedBalance('acct_a', NOW))!.keySpentMicros, 0, 'no key: no key spend');
      assert.deepEqual(await ledger.versionedBalance('acct_a', NOW + 2 * DAY), {
        version: first.version + 1,
        availableMicros: -100 + 200,
        until: Number.MAX_SAFE_INTEGER,
        keySpentMicros: 0,
      });
    });

    it('reads the balance synchronously where the engine runs in-process, and refuses elsewhere', async () => {
      const { ledger, grant } = await ledger_();
      await grant('g_soon', 300, NOW + DAY);
      await grant('g_late', 200, NOW + 2 * DAY);
      await ledger.hold('h1', 'acct_a', 100, NOW, NOW + 1000);
      if (engine.name === 'postgres') {
        assert.throws(() => ledger.balanceNow('acct_a', NOW), /in-process/);
        return;
      }
      assert.deepEqual(ledger.balanceNow('acct_a', NOW), {
        creditMicros: 500,
        heldMicros: 100,
        debtMicros: 0,
        creditLimitMicros: 0,
        availableMicros: 400,
        nextExpiry: NOW + DAY,
      });
      assert.equal(ledger.balanceNow('nobody', NOW), undefined);
    });
  });

  describe('LedgerRepo: batches', () => {
    it('a request id twice in one batch is recorded and charged once, as first settled', async () => {
      const { store, ledger, grant, remaining, daily } = await ledger_();
      await grant('g', 1000, NOW + DAY);
      await ledger.settle([settlement('r1', 100), settlement('r1', 300, { promptTokens: 99 })]);
      assert.equal(await remaining('g'), 900);
      const record = await store.usage.record('r1');
      assert.equal(record?.['cost_micros'], 100);
      assert.equal(record?.['prompt_tokens'], 10);
      assert.deepEqual(
        (await daily()).map((row) => [row['requests'], row['prompt_tokens'], row['cost_micros']]),
        [[1, 10, 100]],
      );
    });

    // A statement takes at most 1,000 rows: exactly one statement's worth, and one row more.
    for (const n of [1000, 1001])
      it(`a batch of ${n} requests, each its own key, settles every request`, async () => {
        const { store, ledger, grant, remaining, account, daily } = await ledger_();
        await grant('g', 10_000, NOW + DAY);
        const ids = Array.from({ length: n }, (_, i) => `r${i}`);
        // The holds as hold() leaves them (one statement here, where a thousand hold() calls would be slow).
        await store.db.run(
          `INSERT INTO holds (request_id, account_id, amount_micros, created_at, expires_at) VALUES ${ids
            .map((_, i) => `($${i + 1}, 'acct_a', 2, ${NOW}, ${NOW + DAY})`)
            .join(', ')}`,
          ids,
        );
        await store.db.run('UPDATE accounts SET held_micros = $2 WHERE id = $1', ['acct_a', 2 * n]);
        const settled = await ledger.settle(ids.map((id, i) => settlement(id, 1, { keyId: `key_${i}` })));
        assert.equal(settled.get('acct_a')?.chargedMicros, n);
        assert.equal(settled.get('acct_a')?.keys.length, n);
        assert.equal(await remaining('g'), 10_000 - n);
        assert.equal((await account()).held, 0, 'every hold released');
        const count = await store.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM usage_records');
        assert.equal(Number(count?.n), n);
        const rows = await daily();
        assert.equal(rows.length, n);
        assert.ok(rows.every((row) => row['requests'] === 1 && row['cost_micros'] === 1));
      });
  });

  describe('LedgerRepo: instance leases', () => {
    it("an instance's holds go back when its lease runs out or it stops cleanly; nothing is charged", async () => {
      const { store, ledger, grant, remaining, account } = await ledger_();
      await grant('g', 1000, NOW + DAY);
      const instance = (id: string) => {
        const repo = new LedgerRepo(store.db);
        repo.useInstance(id);
        return repo;
      };
      const one = instance('i1');
      const two = instance('i2');
      const leases = async () =>
        (
          await store.db.all<{ id: string; heartbeat: number; expires: number }>(
            'SELECT instance_id AS id, heartbeat_at AS heartbeat, expires_at AS expires FROM instance_leases ORDER BY instance_id',
          )
        ).map((row) => ({ ...row }));
      await one.renewInstanceLease('i1', NOW, NOW + 10_000);
      await two.renewInstanceLease('i2', NOW, NOW + 1000);
      await two.renewInstanceLease('i2', NOW + 500, NOW + 20_000);
      assert.deepEqual(await leases(), [
        { id: 'i1', heartbeat: NOW, expires: NOW + 10_000 },
        { id: 'i2', heartbeat: NOW + 500, expires: NOW + 20_000 },
      ]);
      assert.equal(await one.hold('r1', 'acct_a', 100, NOW, NOW + DAY), true);
      assert.equal(await two.hold('r2', 'acct_a', 200, NOW, NOW + DAY), true);
      assert.equal(
        await ledger.hold('r3', 'acct_a', 50, NOW, NOW + DAY),
        true,
        'no instance: never orphaned',
      );

      assert.equal(await ledger.releaseOrphanedHolds(NOW + 9_999), 0);
      assert.equal((await account()).held, 350);
      assert.equal(await ledger.releaseOrphanedHolds(NOW + 10_000), 1, "i1's lease has run out");
      assert.equal((await account()).held, 250);
      assert.deepEqual(await leases(), [{ id: 'i2', heartbeat: NOW + 500, expires: NOW + 20_000 }]);

      assert.equal(await instance('i3').hold('r4', 'acct_a', 10, NOW, NOW + DAY), true);
      assert.equal(await ledger.releaseOrphanedHolds(NOW + 10_000), 1, 'an instance that never had a lease');
      assert.equal((await account()).held, 250);

      assert.equal(await ledger.endInstanceLease('i2'), 1);
      assert.equal((await account()).held, 50);
      assert.deepEqual(await leases(), []);
      assert.equal(await ledger.endInstanceLease('i2'), 0);
      assert.equal(await remaining('g'), 1000, 'released holds charge nothing');
      assert.equal(await ledger.releaseExpiredHolds(NOW + DAY), 1, 'the holds left are still there');
    });
  });
}
