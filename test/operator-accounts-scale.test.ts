import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';

const ACCOUNTS = 100_000;
const BASE = Date.UTC(2026, 0, 1);
const PLANS = ['free_trial', 'starter', 'pro', 'enterprise'];

/** Seed account i: plan by i mod 4, suspended when i mod 10 is 0, never active when i mod 3 is 0. */
const seed = (i: number): { id: string; plan: string; suspended: boolean; lastActiveAt: number | null } => ({
  id: `acct_seed_${i}`,
  plan: PLANS[i % 4]!,
  suspended: i % 10 === 0,
  lastActiveAt: i % 3 === 0 ? null : BASE + i * 500,
});

// The operators' accounts list over 100,000 accounts: filtered, sorted and paged by the database.
for (const backend of BACKENDS) {
  const skip = await backend.unavailable();
  describe(`the accounts console at 100,000 accounts on ${backend.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let server: TestServer;
    before(async () => {
      opened = await backend.open();
      await opened.db.run(
        `INSERT INTO accounts (id, email, password_hash, email_verified, status, plan, created_at, last_active_at)
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${ACCOUNTS})
         SELECT 'acct_seed_' || i, 'seed' || i || '@example.com', 'x', i % 2,
           CASE WHEN i % 10 = 0 THEN 'suspended' ELSE 'active' END,
           CASE i % 4 WHEN 0 THEN 'free_trial' WHEN 1 THEN 'starter' WHEN 2 THEN 'pro' ELSE 'enterprise' END,
           CAST($1 AS BIGINT) + i * 1000,
           CASE WHEN i % 3 = 0 THEN NULL ELSE CAST($1 AS BIGINT) + i * 500 END
         FROM n`,
        [BASE],
      );
      if (backend.name === 'postgres') await opened.db.run('ANALYZE accounts');
      server = await startTestServer({ backend: opened });
    });
    after(async () => {
      await server?.close();
      await opened?.cleanup();
    });

    const list = async (query: string): Promise<{ data: any[]; total: number }> => {
      const response = await server.call('GET', `/api/admin/accounts?${query}`, { key: ADMIN_KEY });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      return response.body;
    };

    it('filters by plan and status, newest first, with the total and non-overlapping pages', async (t) => {
      const expected = Array.from({ length: ACCOUNTS }, (_, i) => seed(i + 1))
        .filter((a) => a.plan === 'pro' && a.suspended)
        .reverse();
      const started = performance.now();
      const first = await list('plan=pro&status=suspended&limit=20');
      t.diagnostic(`plan+status page: ${(performance.now() - started).toFixed(1)} ms`);
      assert.equal(first.total, expected.length);
      assert.deepEqual(
        first.data.map((a) => a.id),
        expected.slice(0, 20).map((a) => a.id),
      );
      assert.ok(first.data.every((a) => a.plan === 'pro' && a.status === 'suspended' && a.balance_usd === 0));
      const second = await list('plan=pro&status=suspended&limit=20&offset=20');
      assert.deepEqual(
        second.data.map((a) => a.id),
        expected.slice(20, 40).map((a) => a.id),
      );
      const oldest = await list('plan=pro&status=suspended&limit=2&order=asc');
      assert.deepEqual(
        oldest.data.map((a) => a.id),
        expected
          .slice(-2)
          .reverse()
          .map((a) => a.id),
      );
    });

    it('searches by e-mail substring or exact id', async (t) => {
      const started = performance.now();
      const found = await list('search=seed4242');
      t.diagnostic(`e-mail substring search: ${(performance.now() - started).toFixed(1)} ms`);
      assert.equal(found.total, 11);
      assert.deepEqual(
        found.data.map((a) => a.email).sort(),
        ['seed4242@example.com', ...Array.from({ length: 10 }, (_, d) => `seed4242${d}@example.com`)].sort(),
      );
      const byId = await list('search=acct_seed_77');
      assert.deepEqual([byId.total, byId.data[0].id], [1, 'acct_seed_77']);
      const escaped = await list('search=%25');
      assert.equal(escaped.total, 0, 'a % in the search is a character, not a wildcard');
    });

    it('sorts by last activity (never-active accounts count as the least recent) and by e-mail', async (t) => {
      const started = performance.now();
      const recent = await list('sort=last_active_at&order=desc&limit=3');
      t.diagnostic(`last_active_at page: ${(performance.now() - started).toFixed(1)} ms`);
      assert.deepEqual(
        recent.data.map((a) => a.id),
        ['acct_seed_100000', 'acct_seed_99998', 'acct_seed_99997'],
      );
      const least = await list('sort=last_active_at&order=asc&limit=50');
      assert.ok(least.data.every((a) => a.last_active_at === null));
      const active = await list('sort=last_active_at&order=asc&limit=2&offset=33333');
      assert.deepEqual(
        active.data.map((a) => a.id),
        ['acct_seed_1', 'acct_seed_2'],
      );
      const byEmail = await list('sort=email&order=asc&limit=50&plan=starter');
      assert.equal(byEmail.total, ACCOUNTS / 4);
      const engineOrder = await opened.db.all<{ email: string }>(
        "SELECT email FROM accounts WHERE plan = 'starter' ORDER BY email LIMIT 50",
      );
      assert.deepEqual(
        byEmail.data.map((a) => a.email),
        engineOrder.map((row) => row.email),
      );
    });

    it('refuses an unknown plan, status or sort with 400', async () => {
      for (const query of ['plan=gold', 'status=closed', 'sort=balance', 'order=up', 'limit=501'])
        assert.equal(
          (await server.call('GET', `/api/admin/accounts?${query}`, { key: ADMIN_KEY })).status,
          400,
          query,
        );
    });
  });
}
