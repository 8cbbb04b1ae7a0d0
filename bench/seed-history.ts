// `npm run seed:history -- --records N --accounts M --database URL [--days D]`: seeds months of usage history
// (accounts, keys, grants, usage records, rollups) into a database, migrating it first. See bench/lib/seed-history.ts.
import { parseArgs } from 'node:util';
import { openDb } from '../src/store/store.ts';
import { seedHistory } from './lib/seed-history.ts';

const { values } = parseArgs({
  options: {
    records: { type: 'string' },
    accounts: { type: 'string', default: '100000' },
    days: { type: 'string', default: '90' },
    database: { type: 'string' },
  },
});
const database = values.database ?? process.env['DATABASE_URL'];
if (!values.records || !database) {
  console.error('usage: npm run seed:history -- --records N --accounts M --database URL [--days D]');
  process.exit(2);
}
const db = openDb(database);
try {
  const result = await seedHistory(db, {
    records: Number(values.records),
    accounts: Number(values.accounts),
    days: Number(values.days),
    log: (line) => console.error(`  ${line}`),
    progress: (done, total) =>
      console.error(`  ${done.toLocaleString('en')} / ${total.toLocaleString('en')} records`),
  });
  console.log(
    `seeded ${result.records.toLocaleString('en')} usage records, ${result.accounts.toLocaleString('en')} accounts, ` +
      `${result.keys.toLocaleString('en')} keys over ${result.perDay.size} days in ${result.seconds.toFixed(1)} s ` +
      `(heavy account ${result.heavyAccountId}: ${result.heavyRecords.toLocaleString('en')} records)`,
  );
} finally {
  await db.close();
}
