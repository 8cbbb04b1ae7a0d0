// `npm run bench:history -- [--sizes 1000000,30000000] [--accounts 100000] [--database postgres://…/postgres]
// [--iterations 30] [--export-cap 600] [--no-write]`: for each size, seeds a fresh PostgreSQL database of its
// own (dropped afterwards) with `seed:history`, starts the real server over it, and times every read of the
// history issue's table through HTTP (p50 / p95 ms), the exports (rows per second, peak RSS), the retention of
// one day and the storage per record. The table goes to docs/performance.md between the history markers.
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { hashSecret } from '../src/accounts/api-key-secret.ts';
import { RETENTION_BATCH } from '../src/jobs/scheduler.ts';
import { openDb } from '../src/store/store.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from '../test/helpers/server.ts';
import { accountIdOf, seedHistory } from './lib/seed-history.ts';

const DAY_MS = 86_400_000;
const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000000,30000000' },
    accounts: { type: 'string', default: '100000' },
    database: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
    iterations: { type: 'string', default: '30' },
    'export-cap': { type: 'string', default: '600' },
    'no-write': { type: 'boolean', default: false },
  },
});
const sizes = values.sizes.split(',').map(Number);
const accounts = Number(values.accounts);
const iterations = Number(values.iterations);
const exportCapMs = Number(values['export-cap']) * 1000;

interface Timing {
  p50: number;
  p95: number;
}
interface ExportRun {
  rows: number;
  seconds: number;
  rowsPerSecond: number;
  /** Rows per second over the first and the second half of the time taken: flat if they are alike. */
  firstHalf: number;
  secondHalf: number;
  peakRssMiB: number;
  whole: boolean;
}
interface SizeResult {
  records: number;
  seedSeconds: number;
  heavyRecords: number;
  reads: Map<string, Timing>;
  exports: Map<string, ExportRun>;
  retention: { seconds: number; rows: number; deadRows: number };
  storage: {
    tableMiB: number;
    indexMiB: number;
    bytesPerRecord: number;
    miBPerMillion: number;
    beforeBytesPerRecord: number | undefined;
  };
}

const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

async function time(fn: () => Promise<unknown>): Promise<Timing> {
  for (let i = 0; i < 3; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const start = performance.now();
    await fn();
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  return { p50: quantile(samples, 0.5), p95: quantile(samples, 0.95) };
}

async function ok(server: TestServer, path: string, key: string): Promise<void> {
  const response = await server.call('GET', path, { key });
  if (response.status !== 200)
    throw new Error(`${path}: ${response.status} ${JSON.stringify(response.body)}`);
}

/** Streams an export, counting lines (rows), for at most the cap; samples this process's RSS meanwhile. */
async function exportRun(server: TestServer, path: string, key: string): Promise<ExportRun> {
  const start = performance.now();
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 200);
  const controller = new AbortController();
  const response = await fetch(`${server.url}${path}`, {
    headers: { authorization: `Bearer ${key}` },
    signal: controller.signal,
  });
  if (response.status !== 200) throw new Error(`${path}: ${response.status}`);
  let lines = 0;
  let whole = true;
  const timeline: [number, number][] = [];
  const decoder = new TextDecoder();
  try {
    for await (const chunk of response.body!) {
      const text = decoder.decode(chunk as Uint8Array, { stream: true });
      for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lines++;
      const elapsed = performance.now() - start;
      timeline.push([elapsed, lines]);
      if (elapsed > exportCapMs) {
        whole = false;
        controller.abort();
        break;
      }
    }
  } catch (error) {
    if (whole) throw error;
  }
  clearInterval(sampler);
  const seconds = (performance.now() - start) / 1000;
  const rows = lines - 1;
  const halfTime = seconds / 2;
  const firstRows = timeline.findLast(([at]) => at <= halfTime * 1000)?.[1] ?? 0;
  return {
    rows,
    seconds,
    rowsPerSecond: rows / seconds,
    firstHalf: firstRows / halfTime,
    secondHalf: (rows - firstRows) / (seconds - halfTime),
    peakRssMiB: peak / 2 ** 20,
    whole,
  };
}

async function benchSize(records: number): Promise<SizeResult> {
  const name = `tollgate_hist_${process.pid}_${records}`;
  const admin = new pg.Client({ connectionString: values.database });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name}`);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = values.database.replace(/\/[^/]*$/, `/${name}`);
  const db = openDb(url);
  try {
    console.error(`seeding ${records.toLocaleString('en')} records…`);
    const seeded = await seedHistory(db, {
      records,
      accounts,
      progress: (done, total) => {
        if (done % 5_000_000 < 500_000 || done === total)
          console.error(`  ${done.toLocaleString('en')} / ${total.toLocaleString('en')}`);
      },
      log: (line) => console.error(`  ${line}`),
    });
    console.error(`seeded in ${seeded.seconds.toFixed(0)} s`);
    const heavySecret = `tg-bench-heavy-${process.pid}-0123456789`;
    await db.run('UPDATE api_keys SET secret_hash = $1 WHERE account_id = $2 AND id = $3', [
      hashSecret(heavySecret),
      accountIdOf(0),
      `key_${(0).toString(16).padStart(16, '0')}`,
    ]);
    const storage = await db.get<{ table: string; total: string }>(
      `SELECT pg_table_size('usage_records') AS table, pg_total_relation_size('usage_records') AS total`,
    );
    const tableBytes = Number(storage!.table);
    const totalBytes = Number(storage!.total);
    // The same rows in the layout they had before (TEXT/BIGINT columns in their old order, the old indexes),
    // measured where copying them is quick.
    let beforeBytes: number | undefined;
    if (records <= 2_000_000) {
      await db.run(`CREATE TABLE usage_records_before (
        request_id TEXT PRIMARY KEY, account_id TEXT NOT NULL, key_id TEXT NOT NULL, model TEXT NOT NULL,
        deployment TEXT, prompt_tokens BIGINT NOT NULL, completion_tokens BIGINT NOT NULL, estimated INTEGER NOT NULL,
        cost_micros BIGINT NOT NULL, uncollected_micros BIGINT NOT NULL DEFAULT 0, status TEXT NOT NULL,
        latency_ms BIGINT NOT NULL, ttft_ms BIGINT, created_at BIGINT NOT NULL)`);
      await db.run('CREATE INDEX usage_records_before_created ON usage_records_before (created_at)');
      await db.run(
        'CREATE INDEX usage_records_before_account ON usage_records_before (account_id, created_at)',
      );
      await db.run('CREATE INDEX usage_records_before_key ON usage_records_before (key_id, created_at)');
      await db.run(`INSERT INTO usage_records_before SELECT request_id, account_id, key_id, model, deployment,
        prompt_tokens, completion_tokens, estimated, cost_micros, uncollected_micros, status, latency_ms, ttft_ms,
        created_at FROM usage_records`);
      const row = await db.get<{ n: string }>("SELECT pg_total_relation_size('usage_records_before') AS n");
      beforeBytes = Number(row!.n);
      await db.run('DROP TABLE usage_records_before');
    }

    const backend = {
      db,
      url,
      schema: undefined,
      reopen: () => openDb(url),
      cleanup: async () => {},
    };
    const server = await startTestServer({ backend });
    const reads = new Map<string, Timing>();
    const exports = new Map<string, ExportRun>();
    let retention = { seconds: 0, rows: 0, deadRows: 0 };
    try {
      const operator = await server.register(`bench-operator-${process.pid}@example.com`);
      const granted = await server.call('POST', '/api/admin/operators', {
        key: ADMIN_KEY,
        body: { email: `bench-operator-${process.pid}@example.com` },
      });
      if (granted.status !== 200) throw new Error(`operator grant: ${granted.status}`);
      const today = new Date(seeded.to).toISOString().slice(0, 10);
      const back = (days: number): string =>
        new Date(seeded.to - (days - 1) * DAY_MS).toISOString().slice(0, 10);
      const holder: [string, string][] = [
        ['/api/account', '/api/account'],
        ['/api/keys (with last used)', '/api/keys'],
        ['/api/usage/daily-by-model (overview chart)', '/api/usage/daily-by-model'],
        ['/api/usage/recent (overview)', '/api/usage/recent?limit=20'],
      ];
      for (const group of ['day', 'model', 'key'])
        for (const days of [30, 90])
          holder.push([
            `/api/usage group_by=${group}, ${days} days`,
            `/api/usage?group_by=${group}&from=${back(days)}&to=${today}`,
          ]);
      for (const [label, path] of holder)
        reads.set(`heavy account: ${label}`, await time(() => ok(server, path, heavySecret)));
      reads.set('GET /api/stats/segmented', await time(() => ok(server, '/api/stats/segmented', ADMIN_KEY)));
      for (const days of [30, 90])
        reads.set(
          `operator statistics, ${days} days`,
          await time(() => ok(server, `/api/admin/stats/daily?days=${days}`, operator.key)),
        );
      // One middle page of the 90-day export over everything: what the quadratic cursor made slow.
      const middle = await db.get<{ created_at: string; request_id: string }>(
        'SELECT created_at, request_id FROM usage_records WHERE created_at >= $1 ORDER BY created_at, request_id LIMIT 1',
        [seeded.from + 45 * DAY_MS],
      );
      const reports = server.services.store.adminReports;
      reads.set(
        'one middle export page (1,000 rows), 90 days, everything',
        await time(() =>
          reports.usagePage(
            { from: seeded.from, to: seeded.to + 1 },
            { createdAt: Number(middle!.created_at), requestId: middle!.request_id },
            1000,
          ),
        ),
      );
      reads.set(
        'one middle export page (1,000 rows), 90 days, heavy account',
        await time(() =>
          reports.usagePage(
            { from: seeded.from, to: seeded.to + 1, accountId: accountIdOf(0) },
            { createdAt: Number(middle!.created_at), requestId: middle!.request_id },
            1000,
          ),
        ),
      );
      const from = new Date(seeded.from).toISOString();
      const to = new Date(seeded.to + 1).toISOString();
      const yesterday = new Date(seeded.to - DAY_MS).toISOString().slice(0, 10);
      exports.set(
        'usage export, 1 day, all accounts',
        await exportRun(server, `/api/admin/usage/export?from=${yesterday}&to=${yesterday}`, operator.key),
      );
      exports.set(
        'usage export, 90 days, heavy account',
        await exportRun(
          server,
          `/api/admin/usage/export?from=${from}&to=${to}&account_id=${accountIdOf(0)}`,
          operator.key,
        ),
      );
      exports.set(
        'usage export, 90 days, everything',
        await exportRun(server, `/api/admin/usage/export?from=${from}&to=${to}`, operator.key),
      );

      // Retention of the oldest whole day, in the retention job's batches.
      const firstDay = Math.floor(seeded.from / DAY_MS) + 1;
      const rowsRow = await db.get<{ n: string }>(
        'SELECT COUNT(*) AS n FROM usage_records WHERE created_at < $1',
        [firstDay * DAY_MS],
      );
      const start = performance.now();
      for (let batch = -1; batch !== 0;)
        batch = await server.services.store.usage.deleteRecordsBefore(firstDay * DAY_MS, RETENTION_BATCH);
      const seconds = (performance.now() - start) / 1000;
      const dead = await db.get<{ n: string | null }>(
        `SELECT SUM(n_dead_tup) AS n FROM pg_stat_user_tables WHERE relname LIKE 'usage\\_records%'`,
      );
      retention = { seconds, rows: Number(rowsRow!.n), deadRows: Number(dead?.n ?? 0) };
    } finally {
      await server.close();
    }
    return {
      records,
      seedSeconds: seeded.seconds,
      heavyRecords: seeded.heavyRecords,
      reads,
      exports,
      retention,
      storage: {
        tableMiB: tableBytes / 2 ** 20,
        indexMiB: (totalBytes - tableBytes) / 2 ** 20,
        bytesPerRecord: totalBytes / records,
        miBPerMillion: totalBytes / 2 ** 20 / (records / 1e6),
        beforeBytesPerRecord: beforeBytes === undefined ? undefined : beforeBytes / records,
      },
    };
  } finally {
    await db.close();
    await admin.query(`DROP DATABASE IF EXISTS ${name}`);
    await admin.end();
  }
}

const fmt = (n: number): string => (n >= 100 ? Math.round(n).toLocaleString('en') : n.toFixed(1));
const results: SizeResult[] = [];
for (const size of sizes) {
  results.push(await benchSize(size));
  console.error(render(results));
  if (!values['no-write']) write(results);
}

function render(all: SizeResult[]): string {
  const head = `| read | ${all.map((r) => `${(r.records / 1e6).toLocaleString('en')}M`).join(' | ')} |\n|---|${all.map(() => '---:').join('|')}|\n`;
  const lines: string[] = [];
  for (const label of all[0]!.reads.keys())
    lines.push(
      `| ${label} | ${all.map((r) => `${fmt(r.reads.get(label)!.p50)} / ${fmt(r.reads.get(label)!.p95)}`).join(' | ')} |`,
    );
  for (const label of all[0]!.exports.keys())
    lines.push(
      `| ${label} | ${all
        .map((r) => {
          const e = r.exports.get(label)!;
          return `${e.whole ? '' : 'stopped after '}${e.rows.toLocaleString('en')} rows in ${fmt(e.seconds)} s: ${fmt(e.rowsPerSecond)} rows/s (halves ${fmt(e.firstHalf)} → ${fmt(e.secondHalf)}), peak RSS ${fmt(e.peakRssMiB)} MiB`;
        })
        .join(' | ')} |`,
    );
  lines.push(
    `| retention of the oldest day (batched deletes) | ${all.map((r) => `${r.retention.rows.toLocaleString('en')} rows in ${(r.retention.seconds * 1000).toFixed(0)} ms, ${r.retention.deadRows} dead rows`).join(' | ')} |`,
  );
  lines.push(
    `| storage: table + indexes per million records | ${all.map((r) => `${fmt(r.storage.miBPerMillion)} MiB (${fmt(r.storage.bytesPerRecord)} B/record; table ${fmt(r.storage.tableMiB)} MiB, indexes ${fmt(r.storage.indexMiB)} MiB)`).join(' | ')} |`,
  );
  lines.push(
    `| storage before (old column types and order, old indexes, same rows) | ${all.map((r) => (r.storage.beforeBytesPerRecord === undefined ? 'not measured' : `${fmt((r.storage.beforeBytesPerRecord * 1e6) / 2 ** 20)} MiB (${fmt(r.storage.beforeBytesPerRecord)} B/record)`)).join(' | ')} |`,
  );
  lines.push(
    `| seeding (\`seed:history\`) | ${all.map((r) => `${fmt(r.seedSeconds)} s (heavy account ${r.heavyRecords.toLocaleString('en')} records)`).join(' | ')} |`,
  );
  return head + lines.join('\n') + '\n';
}

function write(all: SizeResult[]): void {
  const path = new URL('../docs/performance.md', import.meta.url);
  const doc = readFileSync(path, 'utf8');
  const section =
    `<!-- history:start -->\n### History at scale (\`npm run bench:history\`)\n\n` +
    `Measured ${new Date().toISOString().slice(0, 16)}Z on this machine (${accounts.toLocaleString('en')} accounts, ` +
    `${(accounts * 2).toLocaleString('en')} keys, 90 days; p50 / p95 ms over ${iterations} calls through HTTP unless ` +
    `stated; the export is capped at ${exportCapMs / 1000} s).\n\n${render(all)}<!-- history:end -->`;
  const next = /<!-- history:start -->[\s\S]*<!-- history:end -->/.test(doc)
    ? doc.replace(/<!-- history:start -->[\s\S]*<!-- history:end -->/, section)
    : `${doc.trimEnd()}\n\n${section}\n`;
  writeFileSync(path, next);
}
