import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { BACKENDS } from './helpers/backends.ts';
import { type ColdStore, coldRun, prepareColdStore, type StoreKind } from './helpers/cold-start.ts';
import { redisServerMissing } from './helpers/redis-server.ts';

/**
 * A new instance serves its first requests at full speed once `/health/ready` says so: on SQLite, PostgreSQL
 * alone and PostgreSQL + Redis (a fresh database and a redis-server of the test's own, emptied before the
 * start, so the instance is the first of a new Redis generation and its fence falls in its start-up). Five
 * requests at once and one more, each timed from sending to the end of its body, under 100 ms.
 */
const FULL_SPEED_MS = 100;
const postgres = BACKENDS.find((b) => b.name === 'postgres');
const postgresSkip = postgres
  ? await postgres.unavailable()
  : 'PostgreSQL backend excluded by TOLLGATE_TEST_BACKENDS';
const redisSkip = postgresSkip ?? (await redisServerMissing());
const skips: Record<StoreKind, string | undefined> = {
  sqlite: BACKENDS.some((b) => b.name === 'sqlite') ? undefined : 'SQLite backend excluded',
  postgres: postgresSkip,
  'postgres+redis': redisSkip,
};

describe('cold start: the first requests after readiness', () => {
  const stores: ColdStore[] = [];
  after(async () => {
    for (const store of stores) await store.cleanup();
  });

  for (const kind of ['sqlite', 'postgres', 'postgres+redis'] as const) {
    it(
      `on ${kind}, five at once and one more each answer in under ${FULL_SPEED_MS} ms`,
      { skip: skips[kind] ?? false },
      async () => {
        const store = await prepareColdStore(kind);
        stores.push(store);
        await store.emptyRedis();
        const run = await coldRun(store, '/health/ready');
        try {
          const all = [...run.first, run.next];
          console.log(
            `cold start on ${kind}: ready after ${run.readyMs.toFixed(0)} ms; five at once ${run.first.map((r) => r.ms.toFixed(1)).join(', ')} ms; the sixth ${run.next.ms.toFixed(1)} ms; five at once 1 s later ${run.later.map((r) => r.ms.toFixed(1)).join(', ')} ms`,
          );
          assert.deepEqual(
            all.map((r) => r.status),
            [200, 200, 200, 200, 200, 200],
          );
          const slow = all.filter((r) => r.ms >= FULL_SPEED_MS);
          assert.deepEqual(slow, [], `every first request under ${FULL_SPEED_MS} ms`);
        } finally {
          run.gateway.child.kill('SIGTERM');
          await run.gateway.exited;
        }
      },
    );
  }
});
