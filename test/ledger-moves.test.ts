import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { pino } from 'pino';
import { LedgerMovesWatch } from '../src/fleet/ledger-moves-watch.ts';
import { createStore, type Store } from '../src/store/store.ts';
import { BACKENDS, insertFundedAccount, POSTGRES_URL, type OpenedBackend } from './helpers/backends.ts';

/**
 * On PostgreSQL every write that changes an account's spendable credit moves its ledger version, whoever
 * writes it, and is listed in ledger_moves; a settlement moves it once, itself, and is not listed (it applies
 * its charge to Redis's balance itself). The watch of each instance holding credit in Redis reads the list.
 */
const postgres = BACKENDS.find((b) => b.name === 'postgres');
const skip = postgres
  ? await postgres.unavailable()
  : 'PostgreSQL backend excluded by TOLLGATE_TEST_BACKENDS';

describe('ledger moves on PostgreSQL', { skip: skip ?? false }, () => {
  let opened: OpenedBackend;
  let store: Store;
  before(async () => {
    opened = await postgres!.open();
    store = createStore(opened.db);
  });
  after(async () => opened?.cleanup());

  const version = async (id: string) => (await store.ledger.versionedBalance(id, Date.now()))!.version;
  const moved = async (id: string) =>
    (await store.fleet.ledgerMovedSince(0)).find((move) => move.accountId === id)?.version;
  const settlement = (requestId: string, accountId: string, costMicros: number) => ({
    requestId,
    accountId,
    keyId: 'key_1',
    model: 'model-a',
    deployment: 'sim',
    promptTokens: 1,
    completionTokens: 1,
    estimated: false,
    costMicros,
    status: 'ok' as const,
    latencyMs: 1,
    ttftMs: null,
    createdAt: Date.now(),
  });

  it('a grant, an operator’s SQL and a hold row move the version; a settlement moves it by exactly one', async () => {
    await insertFundedAccount(opened, store, 'acct_moves', 1_000);
    const granted = await version('acct_moves');
    assert.ok(granted > 0, 'the grant moved it');
    assert.equal(await moved('acct_moves'), granted, 'and is listed');

    // SQL by hand, from a session whose search_path does not name the schema: the triggers find their tables.
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      await client.query(
        `UPDATE ${opened.schema}.credit_grants SET remaining_micros = 400 WHERE account_id = 'acct_moves'`,
      );
      await client.query(
        `UPDATE ${opened.schema}.accounts SET credit_limit_micros = 0 WHERE id = 'acct_moves'`,
      );
      await client.query(`UPDATE ${opened.schema}.accounts SET last_active_at = 1 WHERE id = 'acct_moves'`);
    } finally {
      await client.end();
    }
    const bySql = await version('acct_moves');
    assert.equal(bySql, granted + 1, 'the grant’s change moved it; an unchanged limit or activity did not');
    assert.equal(await moved('acct_moves'), bySql);

    assert.equal(
      await store.ledger.hold('req_row', 'acct_moves', 100, Date.now(), Date.now() + 60_000),
      true,
    );
    const held = await version('acct_moves');
    assert.equal(held, bySql + 1, 'a hold row changes what is spendable');

    const charged = await store.ledger.settle([settlement('req_row', 'acct_moves', 70)]);
    assert.equal(charged.get('acct_moves')!.version, held + 1, 'a settlement: one step, as Redis expects');
    assert.equal(await moved('acct_moves'), held, 'and is not listed: it tells Redis itself');
    assert.equal((await store.ledger.balance('acct_moves', Date.now())).creditMicros, 330);
  });

  it('the watch has every listed move forgotten, once per version', async () => {
    await insertFundedAccount(opened, store, 'acct_watch', 500);
    const forgotten: [string, number][] = [];
    const watch = new LedgerMovesWatch({
      fleet: store.fleet,
      forget: async (id, v) => void forgotten.push([id, v]),
      logger: pino({ level: 'silent' }),
    });
    await watch.poll();
    const first = forgotten.find(([id]) => id === 'acct_watch');
    assert.deepEqual(first, ['acct_watch', await version('acct_watch')]);
    await watch.poll();
    assert.equal(forgotten.filter(([id]) => id === 'acct_watch').length, 1, 'not again for the same version');
    await opened.db.run("UPDATE credit_grants SET remaining_micros = 1 WHERE account_id = 'acct_watch'");
    await watch.poll();
    assert.deepEqual(forgotten.filter(([id]) => id === 'acct_watch').at(-1), [
      'acct_watch',
      await version('acct_watch'),
    ]);
    await watch.close();
  });
});
