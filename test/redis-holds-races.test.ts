import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { RedisHoldBook } from '../src/billing/redis-hold-book.ts';
import { REASSERT_SCRIPT, SETTLE_SCRIPT } from '../src/billing/redis-hold-scripts.ts';
import { SettlementQueue } from '../src/billing/settlement-queue.ts';
import { GatewayError } from '../src/core/gateway-error.ts';
import { settlementOf } from '../src/billing/testing.ts';
import { connectRedis, type RedisBackends } from '../src/composition/connect-redis.ts';
import { StoreUnavailableError } from '../src/store/db.ts';
import type { LedgerRepo } from '../src/store/ledger-repo.ts';
import { createStore, type Store } from '../src/store/store.ts';
import { BACKENDS, insertFundedAccount, type OpenedBackend } from './helpers/backends.ts';
import { REDIS_URL, redisUnavailable, testPrefix } from './helpers/redis.ts';
import { redisServerMissing, startRedisServer } from './helpers/redis-server.ts';

const silent = pino({ level: 'silent' });
const postgres = BACKENDS.find((b) => b.name === 'postgres');
const EACH = 1_000;

const postgresMissing = postgres
  ? await postgres.unavailable()
  : 'PostgreSQL backend excluded by TOLLGATE_TEST_BACKENDS';
const skip = (await redisUnavailable()) ?? postgresMissing;

/**
 * A settlement batch whose commit lands in PostgreSQL while its acknowledgement is lost (the connection is cut
 * or terminated mid-COMMIT, as the chaos test does) is retried; the retry finds its requests recorded and
 * charges nothing. Their holds in Redis must not then be released against a balance read before that commit.
 */
describe(
  'credit holds in Redis when a settlement commit goes unacknowledged',
  { skip: skip ?? false },
  () => {
    let opened: OpenedBackend;
    let store: Store;
    let backends: RedisBackends;
    const redisPrefix = testPrefix();

    before(async () => {
      opened = await postgres!.open();
      store = createStore(opened.db);
      backends = connectRedis(REDIS_URL, 'local', silent, redisPrefix.prefix);
      await backends.ready(2_000);
    });
    after(async () => {
      await backends?.bus.close();
      await opened?.cleanup();
      await redisPrefix.cleanup();
    });

    /** The real ledger, except that its next `settle` commits and then reports the connection lost. */
    const ledgerLosingOneAck = (ledger: LedgerRepo): LedgerRepo => {
      let lose = true;
      return new Proxy(ledger, {
        get(target, property) {
          if (property === 'settle')
            return async (...args: Parameters<LedgerRepo['settle']>) => {
              const charged = await target.settle(...args);
              if (!lose) return charged;
              lose = false;
              throw new StoreUnavailableError(new Error('Connection terminated unexpectedly'));
            };
          const value: unknown = Reflect.get(target, property, target);
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
    };
    const waitFor = async (done: () => Promise<boolean>): Promise<void> => {
      const deadline = Date.now() + 5_000;
      while (!(await done()) && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 10));
    };
    const money = async (
      accountId: string,
    ): Promise<{ charged: number; uncollected: number; left: number }> => {
      const usage = await opened.db.get<{
        charged: number | string | null;
        uncollected: number | string | null;
      }>(
        `SELECT CAST(SUM(cost_micros - uncollected_micros) AS BIGINT) AS charged,
              CAST(SUM(uncollected_micros) AS BIGINT) AS uncollected FROM usage_records WHERE account_id = $1`,
        [accountId],
      );
      const credit = await opened.db.get<{ s: number | string }>(
        'SELECT CAST(SUM(remaining_micros) AS BIGINT) AS s FROM credit_grants WHERE account_id = $1',
        [accountId],
      );
      return {
        charged: Number(usage?.charged ?? 0),
        uncollected: Number(usage?.uncollected ?? 0),
        left: Number(credit?.s ?? 0),
      };
    };

    it('the retried batch charges nothing and its released holds never free credit twice: no overspend', async () => {
      const accountId = 'acct_lost_ack';
      await insertFundedAccount(opened, store, accountId, EACH * 3);
      const book: RedisHoldBook = backends.holds(store.ledger);
      const queue = new SettlementQueue(ledgerLosingOneAck(store.ledger), silent, {
        holdRows: false,
        windowMs: 0,
        retryMs: 60_000,
      });
      queue.onSettled = (batch, charged) => book.committed(batch, charged);
      const now = Date.now();
      const hold = (requestId: string) => book.hold(requestId, accountId, EACH, now, now + 60_000);
      assert.deepEqual(await Promise.all(['r1', 'r2', 'r3'].map(hold)), [true, true, true]);
      assert.equal(await hold('r0'), false, 'room for exactly three');

      // r1's batch commits but its acknowledgement is lost: it stays queued, and the flush retries it.
      queue.add(settlementOf('r1', accountId, EACH, now));
      await queue.flush();
      assert.equal(queue.pending, 1, 'the unacknowledged batch waits to be retried');
      assert.equal((await money(accountId)).charged, EACH, 'though its commit landed');
      await queue.flush();
      assert.equal(queue.pending, 0);
      await waitFor(async () => (await book.heldMicros(accountId)) === EACH * 2);
      assert.equal(await book.heldMicros(accountId), EACH * 2, 'r1’s hold released once its charge is known');

      // 3 of credit − 1 charged − 2 held: nothing is left for r4.
      const r4 = await hold('r4');
      assert.equal(r4, false, 'the credit r1 was charged is not offered again');

      for (const requestId of ['r2', 'r3', ...(r4 ? ['r4'] : [])])
        queue.add(settlementOf(requestId, accountId, EACH, now));
      await queue.flush();
      await waitFor(async () => (await book.heldMicros(accountId)) === 0);
      assert.deepEqual(await money(accountId), { charged: EACH * 3, uncollected: 0, left: 0 });
      await queue.close();
    });
  },
);

const restartSkip = (await redisServerMissing()) ?? postgresMissing;

/**
 * Redis restarted empty: another instance re-reads the balance from the ledger at once (it checked the new
 * generation), while an instance that has not noticed the restart yet (its heartbeat has not come round) still
 * has requests running whose holds Redis lost. It must not hold against that balance before putting them back.
 */
describe(
  'credit holds in Redis restarted empty, before every instance has noticed',
  { skip: restartSkip ?? false },
  () => {
    it('an instance that has not seen the new generation puts its holds back before it holds again', async () => {
      const own = await startRedisServer();
      const opened = await postgres!.open();
      const store = createStore(opened.db);
      // No heartbeats: the instance that has not noticed stays so until it asks Redis for credit itself.
      const first = connectRedis(own.url, 'local', silent);
      const second = connectRedis(own.url, 'local', silent);
      const probe = new Redis(own.port, '127.0.0.1');
      probe.on('error', () => {});
      try {
        await first.ready(2_000);
        await second.ready(2_000);
        await insertFundedAccount(opened, store, 'acct_unnoticed', EACH * 10);
        const unaware = first.holds(store.ledger);
        const other = second.holds(store.ledger);
        const hold = async (book: RedisHoldBook, requestId: string): Promise<boolean> => {
          const deadline = Date.now() + 15_000;
          for (;;) {
            try {
              return await book.hold(requestId, 'acct_unnoticed', EACH, Date.now(), Date.now() + 60_000);
            } catch (error) {
              // While Redis is coming back a hold may be refused with 503, never granted.
              assert.ok(error instanceof GatewayError && error.code === 'service_unavailable', String(error));
              if (Date.now() > deadline) throw error;
              await new Promise((resolve) => setTimeout(resolve, 50));
            }
          }
        };
        const taken = await Promise.all(
          Array.from({ length: 10 }, (_, i) => hold(unaware, `req_running${i}`)),
        );
        assert.ok(taken.every(Boolean));

        await own.restart();
        // The other instance asks first: it sees the new generation, reads the balance (10 of credit, nothing
        // charged yet) into Redis, and waits out the fence.
        const othersAnswer = hold(other, 'req_other');
        othersAnswer.catch(() => {}); // awaited below; this only keeps a failed run's report clean
        const deadline = Date.now() + 15_000;
        while (
          !(await probe.hexists('tg:hold:{acct_unnoticed}:bal', 'bal').catch(() => 0)) &&
          Date.now() < deadline
        )
          await new Promise((resolve) => setTimeout(resolve, 10));
        assert.equal(
          await probe.hexists('tg:hold:{acct_unnoticed}:bal', 'bal'),
          1,
          'the balance was read again',
        );

        assert.equal(
          await hold(unaware, 'req_new'),
          false,
          'its own ten running requests still hold the credit',
        );
        assert.equal(await othersAnswer, false, 'and every instance sees them');
        assert.equal(Number(await probe.hget('tg:hold:{acct_unnoticed}:bal', 'held')), EACH * 10);
        assert.equal(await probe.hlen('tg:hold:{acct_unnoticed}:holds'), 10);
      } finally {
        probe.disconnect();
        await first.bus.close();
        await second.bus.close();
        await opened.cleanup();
        await own.stop();
      }
    });
  },
);

/**
 * Redis restarted empty and this instance puts its running requests' holds back. A request that settles while
 * its hold is on the way back can have its release reach Redis first (the put-back script, not loaded since the
 * restart, is sent twice): the release finds nothing, then the hold is put back. It must be taken out again.
 */
describe(
  'a hold put back after Redis restarted, whose request settled meanwhile',
  { skip: restartSkip ?? false },
  () => {
    /**
     * Holds req_a and req_b, restarts Redis empty and starts the heartbeat, which puts both back; req_a settles as
     * its put-back is sent. With `failRelease`, Redis refuses the release that follows the put-back once.
     */
    const putBackWhileSettling = async (failRelease: boolean): Promise<void> => {
      const own = await startRedisServer();
      const opened = await postgres!.open();
      const store = createStore(opened.db);
      const client = new Redis(own.port, '127.0.0.1', { maxRetriesPerRequest: null });
      client.on('error', () => {});
      const probe = new Redis(own.port, '127.0.0.1');
      probe.on('error', () => {});
      const sha = (script: string): string => createHash('sha1').update(script).digest('hex');
      const [reassertSha, settleSha] = [sha(REASSERT_SCRIPT), sha(SETTLE_SCRIPT)];
      let book: RedisHoldBook | undefined;
      let settleDuringPutBack: string | undefined;
      let releasesOfA = 0;
      // The real client; when the put-back of `settleDuringPutBack` is sent, its request settles at once: its
      // release is queued on the same connection right behind it.
      const redis = new Proxy(client, {
        get(target, property) {
          const value: unknown = Reflect.get(target, property, target);
          if (property !== 'evalsha' || typeof value !== 'function') return value;
          return (script: string, ...rest: (string | number)[]) => {
            if (script === settleSha && rest.includes('req_a') && ++releasesOfA === 2 && failRelease)
              return Promise.reject(
                Object.assign(new Error('READONLY (a failure of Redis)'), { name: 'ReplyError' }),
              );
            const sent = (value as (...a: unknown[]) => Promise<unknown>).call(target, script, ...rest);
            if (script === reassertSha && rest.includes(settleDuringPutBack ?? '\u0000')) {
              const requestId = settleDuringPutBack!;
              settleDuringPutBack = undefined;
              book!.committed([settlementOf(requestId, 'acct_put_back', 0, Date.now())], new Map());
            }
            return sent;
          };
        },
      });
      try {
        await insertFundedAccount(opened, store, 'acct_put_back', EACH * 10);
        book = new RedisHoldBook({ redis, ledger: store.ledger, logger: silent });
        const now = Date.now();
        for (const requestId of ['req_a', 'req_b'])
          assert.equal(await book.hold(requestId, 'acct_put_back', EACH, now, now + 60_000), true);

        await own.restart();
        // The release goes first: the settle script is loaded in the new Redis, the put-back script is not.
        await probe.script('LOAD', SETTLE_SCRIPT);
        settleDuringPutBack = 'req_a';
        // The heartbeat finds the new generation and puts both holds back.
        await book.start();
        assert.equal(settleDuringPutBack, undefined, 'req_a settled while its hold was being put back');
        assert.ok(releasesOfA >= 2, 'req_a was released again after its put-back');

        const holds = 'tg:hold:{acct_put_back}:holds';
        const deadline = Date.now() + 5_000;
        while ((await probe.hlen(holds)) !== 1 && Date.now() < deadline)
          await new Promise((resolve) => setTimeout(resolve, 50));
        assert.deepEqual(await probe.hkeys(holds), ['req_b'], 'only the running request holds credit');
        assert.equal(Number(await probe.hget('tg:hold:{acct_put_back}:bal', 'held')), EACH);
      } finally {
        await book?.close();
        probe.disconnect();
        client.disconnect();
        await opened.cleanup();
        await own.stop();
      }
    };

    it('is taken out again: nothing stays held for a finished request', async () => {
      await putBackWhileSettling(false);
    });

    it('is taken out on a later try when Redis fails that release', async () => {
      await putBackWhileSettling(true);
    });
  },
);

/**
 * A request answered while the database is away has its settlement journaled on its hold (and the hold lowered
 * to its cost) so that a survivor charges it if this instance dies. Redis then restarts empty: the hold this
 * instance puts back must carry that journal, or a death after it would leave the answer never charged.
 */
describe(
  'a finished request’s hold put back after Redis restarted empty',
  { skip: restartSkip ?? false },
  () => {
    it('carries its settlement and its lowered amount', async () => {
      const own = await startRedisServer();
      const opened = await postgres!.open();
      const store = createStore(opened.db);
      const backends = connectRedis(own.url, 'local', silent);
      const probe = new Redis(own.port, '127.0.0.1');
      probe.on('error', () => {});
      try {
        await backends.ready(2_000);
        await insertFundedAccount(opened, store, 'acct_journaled', EACH * 10);
        const book = backends.holds(store.ledger);
        const now = Date.now();
        assert.equal(await book.hold('req_answered', 'acct_journaled', EACH, now, now + 60_000), true);
        await book.finished(settlementOf('req_answered', 'acct_journaled', 300, now));

        await own.restart();
        // The next hold checks the generation, finds Redis empty and puts this instance's holds back first.
        const deadline = Date.now() + 15_000;
        for (;;) {
          try {
            await book.hold('req_next', 'acct_journaled', EACH, Date.now(), Date.now() + 60_000);
            break;
          } catch (error) {
            assert.ok(error instanceof GatewayError && error.code === 'service_unavailable', String(error));
            if (Date.now() > deadline) throw error;
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        }
        const entry = await probe.hget('tg:hold:{acct_journaled}:holds', 'req_answered');
        assert.ok(entry, 'the hold was put back');
        const hold = JSON.parse(entry) as { a: number; s?: string };
        assert.equal(hold.a, 300, 'at its cost, not its worst case');
        assert.equal(
          (JSON.parse(hold.s ?? '{}') as { costMicros?: number }).costMicros,
          300,
          'with its settlement',
        );
      } finally {
        probe.disconnect();
        await backends.bus.close();
        await opened.cleanup();
        await own.stop();
      }
    });
  },
);
