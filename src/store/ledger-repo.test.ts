import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { migrate } from './migrate.ts';
import { newAccountRecord, type Settlement } from './records.ts';
import { createStore, openDb } from './store.ts';
import { toBalance, utcDay } from './ledger-repo.ts';

const NOW = Date.parse('2026-11-03T10:00:00Z');
const DAY = 86_400_000;

async function ledger() {
  const store = createStore(openDb('sqlite::memory:'));
  await migrate(store.db);
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
        },
      ],
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
    assert.equal(await ledger.hold('h1', 'acct_a', 351, NOW, NOW + 1000), false, '500 − 150 = 350 available');
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
