import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { migrate } from '../src/store/migrate.ts';
import { type AccountRecord, newAccountRecord } from '../src/core/records.ts';
import { createStore, type Store } from '../src/store/store.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';

const NOW = Date.parse('2026-11-10T12:00:00Z');

const account = (id: string, email: string): AccountRecord => newAccountRecord(id, email, 'scrypt$x', NOW);

for (const backend of BACKENDS) {
  const skip = await backend.unavailable();
  describe(`the store contract on ${backend.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let store: Store;
    before(async () => {
      opened = await backend.open();
      store = createStore(opened.db);
    });
    after(async () => opened?.cleanup());

    const withCredit = async (id: string, micros: number): Promise<void> => {
      await store.accounts.insert(account(id, `${id}@example.com`));
      await store.ledger.addGrant({
        id: `g_${id}`,
        accountId: id,
        kind: 'admin',
        amountMicros: micros,
        remainingMicros: micros,
        expiresAt: NOW + 86_400_000,
        createdAt: NOW,
        source: null,
      });
    };

    it('migrations apply once', async () => {
      assert.deepEqual(await migrate(opened.db), []);
    });

    it('account search treats % and _ literally', async () => {
      await store.accounts.insert(account('a_pct', 'per%cent@example.com'));
      await store.accounts.insert(account('a_plain', 'percent@example.com'));
      const found = await store.accounts.list('per%', 10, 0);
      assert.deepEqual(
        found.accounts.map((a) => a.email),
        ['per%cent@example.com'],
      );
      assert.equal((await store.accounts.list('r_e', 10, 0)).total, 0);
    });

    it('an e-mail token is used once, and not after it expires', async () => {
      await store.accounts.insert(account('a_tok', 'tok@example.com'));
      await store.accounts.insertEmailToken('h1', 'a_tok', NOW + 1000);
      await store.accounts.insertEmailToken('h2', 'a_tok', NOW + 1000);
      assert.deepEqual(await store.accounts.consumeEmailToken('h1', NOW), { accountId: 'a_tok' });
      assert.equal(await store.accounts.consumeEmailToken('h1', NOW), 'used');
      assert.equal(await store.accounts.consumeEmailToken('h2', NOW + 1000), 'expired');
      assert.equal(await store.accounts.consumeEmailToken('nope', NOW), 'unknown');
    });

    it('concurrent holds never exceed the balance', async () => {
      await withCredit('a_hold', 100);
      const results = await Promise.all(
        Array.from({ length: 25 }, (_, i) => store.ledger.hold(`h${i}`, 'a_hold', 10, NOW, NOW + 60_000)),
      );
      assert.equal(results.filter(Boolean).length, 10);
      const balance = await store.ledger.balance('a_hold', NOW);
      assert.equal(balance.heldMicros, 100);
      assert.equal(balance.availableMicros, 0);
      assert.equal(await store.ledger.releaseExpiredHolds(NOW + 60_000), 10);
      assert.equal((await store.ledger.balance('a_hold', NOW)).availableMicros, 100);
    });

    it('settlement charges once per request id and keeps the ledger whole', async () => {
      await withCredit('a_settle', 1_000);
      assert.equal(await store.ledger.hold('s1', 'a_settle', 400, NOW, NOW + 60_000), true);
      const settlement = {
        requestId: 's1',
        accountId: 'a_settle',
        keyId: 'k',
        model: 'model-b',
        deployment: 'd',
        promptTokens: 10,
        completionTokens: 10,
        estimated: false,
        costMicros: 250,
        status: 'ok' as const,
        latencyMs: 3,
        ttftMs: null,
        createdAt: NOW,
      };
      await store.ledger.settle([settlement, settlement]);
      await store.ledger.settle([settlement]);
      const balance = await store.ledger.balance('a_settle', NOW);
      assert.deepEqual([balance.creditMicros, balance.heldMicros, balance.availableMicros], [750, 0, 750]);
      assert.equal(await store.usage.recordCount('a_settle'), 1);
      assert.deepEqual(
        (await store.usage.summary('a_settle', '2026-11-10', '2026-11-10', 'model')).map((r) => [
          r.group,
          r.requests,
          r.costMicros,
        ]),
        [['model-b', 1, 250]],
      );
    });

    it('a charge beyond the credit is recorded as uncollected, never as a negative balance', async () => {
      await withCredit('a_over', 100);
      await store.ledger.settle([
        {
          requestId: 'o1',
          accountId: 'a_over',
          keyId: 'k',
          model: 'model-a',
          deployment: null,
          promptTokens: 1,
          completionTokens: 1,
          estimated: false,
          costMicros: 130,
          status: 'ok',
          latencyMs: 1,
          ttftMs: null,
          createdAt: NOW,
        },
      ]);
      assert.equal((await store.ledger.balance('a_over', NOW)).creditMicros, 0);
      const record = await store.usage.record('o1');
      assert.equal(record?.['uncollected_micros'], 30);
    });

    it('a lease belongs to one owner until it runs out', async () => {
      assert.equal(await store.system.acquireLease('job', 'a', NOW, NOW + 1000), true);
      assert.equal(await store.system.acquireLease('job', 'b', NOW + 500, NOW + 1500), false);
      assert.equal(
        await store.system.acquireLease('job', 'a', NOW + 600, NOW + 1600),
        true,
        'the owner renews',
      );
      assert.equal(
        await store.system.acquireLease('job', 'b', NOW + 1600, NOW + 2600),
        true,
        'taken over once it ran out',
      );
    });

    it('outbox claims are disjoint, and a leased event is not due again before its lease ends', async () => {
      await store.accounts.insert(account('a_out', 'out@example.com'));
      for (let i = 0; i < 6; i++) {
        await store.webhooks.enqueue({
          id: `e${i}`,
          accountId: 'a_out',
          eventType: 't',
          payload: '{}',
          status: 'pending',
          attempts: 0,
          nextAttemptAt: NOW,
          createdAt: NOW,
          finishedAt: null,
        });
      }
      const [first, second] = await Promise.all([
        store.webhooks.claimDue(NOW, NOW + 1000, 4),
        store.webhooks.claimDue(NOW, NOW + 1000, 4),
      ]);
      const ids = [...first, ...second].map((e) => e.id);
      assert.equal(ids.length, 6);
      assert.equal(new Set(ids).size, 6);
      assert.deepEqual(await store.webhooks.claimDue(NOW + 999, NOW + 2000, 10), []);
      assert.equal((await store.webhooks.claimDue(NOW + 1000, NOW + 2000, 10)).length, 6);
    });

    it('an order completes once; a provider event is processed once', async () => {
      await store.accounts.insert(account('a_ord', 'ord@example.com'));
      await store.payments.insertOrder({
        id: 'o_1',
        accountId: 'a_ord',
        kind: 'topup',
        plan: null,
        amountMicros: 5_000_000,
        currency: 'USD',
        status: 'pending',
        reason: null,
        provider: 'test',
        providerRef: null,
        createdAt: NOW,
        completedAt: null,
      });
      assert.deepEqual(
        await Promise.all([
          store.payments.complete('o_1', 'paid', null, NOW),
          store.payments.complete('o_1', 'failed', 'x', NOW),
        ]).then((r) => r.filter(Boolean).length),
        1,
      );
      assert.equal(await store.payments.markEventProcessed('stripe', 'evt_1', NOW), true);
      assert.equal(await store.payments.markEventProcessed('stripe', 'evt_1', NOW), false);
    });
  });
}
