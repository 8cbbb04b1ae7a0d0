/** Settlements per second on one store, alone (a short run): `node bench/settle-rate.ts [postgres://…]`. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate } from '../src/store/migrate.ts';
import { createStore, openDb } from '../src/store/store.ts';
const url = process.argv[2] ?? `sqlite:${join(mkdtempSync(join(tmpdir(), 'h8b-')), 'b.db')}`;
const schema = url.startsWith('postgres') ? `tg_h8b_${process.pid}` : undefined;
if (schema) {
  const pg = (await import('pg')).default;
  const c = new pg.Client(url);
  await c.connect();
  await c.query(`CREATE SCHEMA ${schema}`);
  await c.end();
}
const db = openDb(url, schema ? { schema } : undefined);
await migrate(db);
const store = createStore(db);
const now = Date.now();
const accounts = Array.from({ length: 100 }, (_, i) => `acct_${i}`);
for (const id of accounts) {
  await db.run(
    `INSERT INTO accounts (id, email, password_hash, plan, created_at) VALUES ($1, $2, 'x', 'enterprise', $3)`,
    [id, `${id}@b`, now],
  );
  await store.ledger.addGrant({
    id: `g_${id}`,
    accountId: id,
    kind: 'admin',
    amountMicros: 1e12,
    remainingMicros: 1e12,
    expiresAt: now + 86_400_000,
    createdAt: now,
    source: null,
  });
}
const N = 20_000;
const s = Array.from({ length: N }, (_, i) => ({
  requestId: `r${i}`,
  accountId: accounts[i % 100]!,
  keyId: 'k',
  model: 'm',
  deployment: 'd',
  promptTokens: 12,
  completionTokens: 7,
  estimated: false,
  costMicros: 3,
  status: 'ok' as const,
  latencyMs: 1,
  ttftMs: null,
  createdAt: now,
}));
const t = performance.now();
for (let i = 0; i < N; i += 256) await store.ledger.settle(s.slice(i, i + 256));
const sec = (performance.now() - t) / 1000;
console.log(url.split(':')[0], Math.round(N / sec), 'settlements/s');
if (schema) {
  await db.run(`DROP SCHEMA ${schema} CASCADE`);
}
await db.close();
