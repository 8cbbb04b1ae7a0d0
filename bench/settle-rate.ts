/**
 * Settlements (and holds) per second on one store alone, a short run: `node bench/settle-rate.ts [postgres://…]`.
 * The same measurement as the harness's micro-benchmarks, without starting any gateway.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openDb } from '../src/store/store.ts';
import { settleRate } from './lib/micro.ts';

const postgresUrl = process.argv[2];
const dir = postgresUrl ? undefined : mkdtempSync(join(tmpdir(), 'tollgate-settle-'));
const schema = `tg_settle_${process.pid}`;
const admin = postgresUrl ? new pg.Client({ connectionString: postgresUrl }) : undefined;
if (admin) {
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
}
const db = postgresUrl ? openDb(postgresUrl, { schema }) : openDb(`sqlite:${join(dir!, 'bench.db')}`);
try {
  for (const result of await settleRate(db, postgresUrl ? 'PostgreSQL' : 'SQLite'))
    console.log(`${result.name}: ${Math.round(result.perSecond)}/s (${result.note})`);
} finally {
  await db.close();
  if (admin) {
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
}
