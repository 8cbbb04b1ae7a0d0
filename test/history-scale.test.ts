import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { accountIdOf, seedHistory, type SeedResult } from '../bench/lib/seed-history.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';

const DAY_MS = 86_400_000;
const RECORDS = 4_100;
const DAYS = 10;

for (const backend of BACKENDS) {
  const skip = await backend.unavailable();
  describe(`seeded history on ${backend.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let server: TestServer;
    let seeded: SeedResult;
    let operatorKey: string;
    before(async () => {
      opened = await backend.open();
      // Whole hours: about 17 records share each time, so pages of the export end inside runs of equal times.
      seeded = await seedHistory(opened.db, {
        records: RECORDS,
        accounts: 40,
        days: DAYS,
        tickMs: 3_600_000,
        heavyPermille: 200,
      });
      server = await startTestServer({ backend: opened });
      const email = `history-op-${Date.now()}@example.com`;
      operatorKey = (await server.register(email)).key;
      const granted = await server.call('POST', '/api/admin/operators', { key: ADMIN_KEY, body: { email } });
      assert.equal(granted.status, 200, JSON.stringify(granted.body));
    });
    after(async () => {
      await server?.close();
      await opened?.cleanup();
    });

    it('the operator statistics count every seeded record, per day, to the row', async () => {
      const stats = await server.call('GET', `/api/admin/stats/daily?days=${DAYS + 2}`, { key: operatorKey });
      assert.equal(stats.status, 200, JSON.stringify(stats.body));
      // The truth is the records themselves, counted per UTC day straight from the table.
      const counted = await opened.db.all<{ d: number | string; n: number | string }>(
        `SELECT created_at / ${DAY_MS} AS d, COUNT(*) AS n FROM usage_records GROUP BY created_at / ${DAY_MS}`,
      );
      const expected = new Map(
        counted.map((row) => [new Date(Number(row.d) * DAY_MS).toISOString().slice(0, 10), Number(row.n)]),
      );
      const reported = new Map<string, number>(
        stats.body.data.filter((row: any) => row.requests > 0).map((row: any) => [row.day, row.requests]),
      );
      assert.deepEqual(reported, expected);
      assert.equal(
        [...reported.values()].reduce((sum, n) => sum + n, 0),
        RECORDS,
      );
      const byModel = stats.body.by_model.reduce((sum: number, row: any) => sum + row.requests, 0);
      const byPlan = stats.body.by_plan.reduce((sum: number, row: any) => sum + row.requests, 0);
      assert.equal(byModel, RECORDS);
      assert.equal(byPlan, RECORDS);
      assert.equal(
        stats.body.by_plan
          .filter((row: any) => row.plan === 'enterprise')
          .reduce((sum: number, row: any) => sum + row.requests, 0),
        seeded.heavyRecords,
        'the heavy account is the one on Enterprise',
      );
    });

    it('the export returns every record once, oldest first, over everything and for the heavy account', async () => {
      const from = new Date(seeded.from).toISOString();
      const to = new Date(seeded.to + 1).toISOString();
      for (const accountId of [undefined, accountIdOf(0)]) {
        const response = await fetch(
          `${server.url}/api/admin/usage/export?from=${from}&to=${to}&format=jsonl${accountId ? `&account_id=${accountId}` : ''}`,
          { headers: { authorization: `Bearer ${operatorKey}` } },
        );
        assert.equal(response.status, 200);
        const rows = (await response.text())
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line));
        const expected = accountId === undefined ? RECORDS : seeded.heavyRecords;
        assert.equal(rows.length, expected);
        assert.equal(new Set(rows.map((row) => row.request_id)).size, expected, 'no record twice');
        for (let i = 1; i < rows.length; i++)
          assert.ok(rows[i - 1].created_at <= rows[i].created_at, `row ${i} out of order`);
        // Pages of 1,000: the export's page boundaries fall inside runs of equal times.
        const sameAcross = [1000, 2000, 3000, 4000].filter(
          (i) => i < rows.length && rows[i - 1].created_at === rows[i].created_at,
        );
        if (accountId === undefined) assert.ok(sameAcross.length > 0, 'a page boundary between equal times');
      }
      const heavy = await opened.db.get<{ n: number | string }>(
        'SELECT COUNT(*) AS n FROM usage_records WHERE account_id = $1',
        [accountIdOf(0)],
      );
      assert.equal(Number(heavy?.n), seeded.heavyRecords);
    });

    it('small pages cut through runs of equal times, and every record comes once across them', async () => {
      const reports = server.services.store.adminReports;
      for (const accountId of [undefined, accountIdOf(0)]) {
        const range = { from: seeded.from, to: seeded.to + 1, ...(accountId ? { accountId } : {}) };
        const seen = new Set<string>();
        let after: { createdAt: number; requestId: string } | undefined;
        let boundariesInTies = 0;
        for (;;) {
          const page = await reports.usagePage(range, after, 7);
          if (page.length === 0) break;
          if (after && page[0]!.createdAt === after.createdAt) boundariesInTies++;
          for (const row of page) {
            assert.ok(!seen.has(row.requestId), `${row.requestId} twice`);
            seen.add(row.requestId);
          }
          const last = page.at(-1)!;
          after = { createdAt: last.createdAt, requestId: last.requestId };
        }
        assert.equal(seen.size, accountId === undefined ? RECORDS : seeded.heavyRecords);
        assert.ok(boundariesInTies > 50, `only ${boundariesInTies} page boundaries inside equal times`);
      }
    });

    it('retention deletes the oldest days in batches, and the statistics keep them', async () => {
      const cutoff = (Math.floor(seeded.from / DAY_MS) + 2) * DAY_MS;
      const old = await opened.db.get<{ n: number | string }>(
        'SELECT COUNT(*) AS n FROM usage_records WHERE created_at < $1',
        [cutoff],
      );
      assert.ok(Number(old?.n) > 0);
      const store = server.services.store;
      let deleted = 0;
      let batches = 0;
      for (let batch = -1; batch !== 0; deleted += batch, batches++)
        batch = await store.usage.deleteRecordsBefore(cutoff, 500);
      assert.equal(deleted, Number(old?.n));
      assert.ok(batches > 2, 'deleted a bounded batch at a time');
      assert.equal(await store.usage.recordCount(), RECORDS - Number(old?.n));
      const stats = await server.call('GET', `/api/admin/stats/daily?days=${DAYS + 2}`, { key: operatorKey });
      assert.equal(
        stats.body.data.reduce((sum: number, row: any) => sum + row.requests, 0),
        RECORDS,
      );
    });

    it('the day totals follow records inserted and changed by any writer, net of what was left uncollected', async () => {
      // Written the way a release that knows nothing of the totals writes them: the record, then what its
      // credit could not cover; the database keeps the totals right by itself.
      const at = seeded.to - 5 * 60_000;
      const requestId = `req_totals_${Date.now()}`;
      const insert = `INSERT INTO usage_records (request_id, account_id, key_id, model, deployment, prompt_tokens,
          completion_tokens, estimated, cost_micros, status, latency_ms, ttft_ms, created_at)
        VALUES ($1, $2, $3, 'model-b', 'simulator', 1200, 300, 0, 4567, 'ok', 250, 40, $4)
        ON CONFLICT (request_id) DO NOTHING`;
      const params = [requestId, accountIdOf(3), `key_${(6).toString(16).padStart(16, '0')}`, at];
      assert.equal(await opened.db.run(insert, params), 1);
      assert.equal(await opened.db.run(insert, params), 0, 'a request recorded twice is recorded once');
      await opened.db.run('UPDATE usage_records SET uncollected_micros = 1234 WHERE request_id = $1', [
        requestId,
      ]);

      // Every day still holding all its records (retention took the oldest ones), straight from the table.
      const firstKept = Math.floor(seeded.from / DAY_MS) + 2;
      const counted = await opened.db.all<Record<string, number | string>>(
        `SELECT created_at / ${DAY_MS} AS d, COUNT(*) AS n, SUM(prompt_tokens + completion_tokens) AS tokens,
           SUM(cost_micros - uncollected_micros) AS spend
         FROM usage_records WHERE created_at >= $1 GROUP BY created_at / ${DAY_MS}`,
        [firstKept * DAY_MS],
      );
      const expected = new Map(
        counted.map((row) => [
          new Date(Number(row['d']) * DAY_MS).toISOString().slice(0, 10),
          { requests: Number(row['n']), tokens: Number(row['tokens']), spendMicros: Number(row['spend']) },
        ]),
      );
      const fromDay = new Date(firstKept * DAY_MS).toISOString().slice(0, 10);
      const toDay = new Date(seeded.to).toISOString().slice(0, 10);
      const totals = await server.services.store.adminReports.dailyTotals(fromDay, toDay);
      assert.deepEqual(new Map(totals.map(({ day, ...rest }) => [day, rest])), expected);
      const plan = await server.services.store.adminReports.dailyBy('plan', toDay, toDay);
      assert.equal(
        plan.reduce((sum, row) => sum + row.spendMicros, 0),
        expected.get(toDay)!.spendMicros,
      );
    });
  });
}
