import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Db } from '../src/store/db.ts';
import type { Settlement } from '../src/core/records.ts';
import { createStore, type Store } from '../src/store/store.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { ADMIN_KEY, startTestServer } from './helpers/server.ts';

const NOW = Date.parse('2026-11-03T10:00:00Z');
const LEASE = 30_000;
const HOUR = 3_600_000;

for (const backend of BACKENDS) {
  describe(`instance leases on ${backend.name}`, { skip: (await backend.unavailable()) ?? false }, () => {
    let opened: OpenedBackend;
    let otherDb: Db;
    /** Two instances on one database: each its own store and lease. */
    let a: Store;
    let b: Store;
    before(async () => {
      opened = await backend.open();
      otherDb = opened.reopen();
      a = createStore(opened.db);
      b = createStore(otherDb);
      a.ledger.useInstance('inst_a');
      b.ledger.useInstance('inst_b');
    });
    after(async () => {
      await otherDb?.close();
      await opened?.cleanup();
    });

    async function account(id: string, micros: number): Promise<void> {
      await opened.db.run(
        `INSERT INTO accounts (id, email, password_hash, plan, created_at) VALUES ($1, $2, 'x', 'enterprise', $3)`,
        [id, `${id}@test`, NOW],
      );
      await a.ledger.addGrant({
        id: `grant_${id}`,
        accountId: id,
        kind: 'admin',
        amountMicros: micros,
        remainingMicros: micros,
        expiresAt: NOW + 30 * 86_400_000,
        createdAt: NOW,
        source: null,
      });
    }

    const settlement = (requestId: string, accountId: string, costMicros: number): Settlement => ({
      requestId,
      accountId,
      keyId: 'key_1',
      model: 'model-b',
      deployment: null,
      promptTokens: 10,
      completionTokens: 5,
      estimated: false,
      costMicros,
      status: 'ok',
      latencyMs: 1,
      ttftMs: null,
      createdAt: NOW + 1_000,
    });

    it('a dead instance’s holds are released once its lease runs out, and nothing is charged', async () => {
      await account('acct_dead', 1_000);
      await a.ledger.renewInstanceLease('inst_a', NOW, NOW + LEASE);
      await b.ledger.renewInstanceLease('inst_b', NOW, NOW + LEASE);
      assert.equal(await a.ledger.hold('req_a1', 'acct_dead', 700, NOW, NOW + HOUR), true);
      assert.equal(await b.ledger.hold('req_b1', 'acct_dead', 200, NOW, NOW + HOUR), true);
      // Instance a dies (no more heartbeats); b keeps beating.
      assert.equal(await b.ledger.hold('req_b2', 'acct_dead', 200, NOW, NOW + HOUR), false, 'credit is held');
      assert.equal(await b.ledger.releaseOrphanedHolds(NOW + LEASE - 1), 0, 'a live lease keeps its holds');
      await b.ledger.renewInstanceLease('inst_b', NOW + LEASE, NOW + 2 * LEASE);
      assert.equal(await b.ledger.releaseOrphanedHolds(NOW + LEASE), 1);
      const balance = await b.ledger.balance('acct_dead', NOW + LEASE);
      assert.equal(balance.heldMicros, 200, 'only the live instance’s hold is left');
      assert.equal(balance.creditMicros, 1_000, 'nothing charged for the request that never finished');
      assert.equal(await b.ledger.hold('req_b2', 'acct_dead', 700, NOW + LEASE, NOW + HOUR), true);
      // The live instance's requests settle as usual.
      await b.ledger.settle([settlement('req_b1', 'acct_dead', 150), settlement('req_b2', 'acct_dead', 600)]);
      const after = await b.ledger.balance('acct_dead', NOW + LEASE);
      assert.equal(after.heldMicros, 0);
      assert.equal(after.creditMicros, 250);
      const leases = await opened.db.all('SELECT instance_id FROM instance_leases ORDER BY instance_id');
      assert.deepEqual(
        leases.map((row) => row['instance_id']),
        ['inst_b'],
        'the dead lease is forgotten',
      );
    });

    it('a clean stop releases what the instance still holds at once', async () => {
      await account('acct_stop', 1_000);
      await a.ledger.renewInstanceLease('inst_a', NOW, NOW + LEASE);
      assert.equal(await a.ledger.hold('req_s1', 'acct_stop', 900, NOW, NOW + HOUR), true);
      assert.equal(await a.ledger.endInstanceLease('inst_a'), 1);
      assert.equal((await a.ledger.balance('acct_stop', NOW)).heldMicros, 0);
    });
  });
}

const postgres = BACKENDS.find((backend) => backend.name === 'postgres');
const postgresSkip = postgres ? await postgres.unavailable() : 'PostgreSQL is not in TOLLGATE_TEST_BACKENDS';

describe('an instance on PostgreSQL', { skip: postgresSkip ?? false }, () => {
  it('holds its requests’ credit under its own lease, and a clean stop leaves neither', async () => {
    const opened = await postgres!.open();
    try {
      const server = await startTestServer({
        backend: opened,
        ownConnection: true,
        yaml: { simulator: { chunk_interval_ms: 20 } },
      });
      const { key, accountId } = await server.register();
      await server.call('POST', `/api/admin/accounts/${accountId}/credits`, {
        key: ADMIN_KEY,
        body: { amount_usd: 5 },
      });
      const streaming = fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'model-b',
          max_tokens: 16,
          stream: true,
          messages: [{ role: 'user', content: 'lease' }],
        }),
      });
      let holds: Record<string, unknown>[] = [];
      for (let i = 0; i < 100 && holds.length === 0; i++) {
        holds = await opened.db.all('SELECT instance_id FROM holds');
        if (holds.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const leases = await opened.db.all<{ instance_id: string; expires_at: number }>(
        'SELECT instance_id, expires_at FROM instance_leases',
      );
      assert.equal(leases.length, 1);
      assert.ok(Number(leases[0]!.expires_at) > Date.now(), 'the lease is live');
      assert.equal(holds.length, 1, 'the stream’s hold is taken');
      assert.equal(holds[0]!['instance_id'], leases[0]!.instance_id, 'under this instance’s lease');
      assert.equal((await (await streaming).text()).endsWith('data: [DONE]\n\n'), true);
      await server.close();
      assert.deepEqual(await opened.db.all('SELECT instance_id FROM instance_leases'), []);
      assert.deepEqual(await opened.db.all('SELECT request_id FROM holds'), []);
    } finally {
      await opened.cleanup();
    }
  });
});
