import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import type { RedisClient } from '../src/shared/redis-script.ts';
import type { LedgerRepo } from '../src/store/ledger-repo.ts';
import type { Settlement } from '../src/core/records.ts';
import { RedisHoldBook } from '../src/billing/redis-hold-book.ts';

/**
 * A Redis that answers every command but fails every script with the error a settle script gave in a mixed
 * fleet: the release of settled holds must back off (a few tries, not one per heartbeat per batch), be
 * visible at error level once, be counted, and not hold a stop.
 */
function scriptFailingRedis(): { redis: RedisClient; scripts: () => number } {
  let scripts = 0;
  const fail = async (): Promise<never> => {
    scripts++;
    throw Object.assign(new Error('ERR value is not an integer or out of range'), { name: 'ReplyError' });
  };
  const redis = {
    status: 'ready',
    evalsha: fail,
    eval: fail,
    zadd: async () => 1,
    zrem: async () => 1,
    zrangebyscore: async () => [],
    set: async () => null,
    get: async () => 'generation-1',
    pttl: async () => -2,
    sadd: async () => 1,
    smembers: async () => [],
    del: async () => 1,
  };
  return { redis: redis as unknown as RedisClient, scripts: () => scripts };
}

const settlement = (requestId: string): Settlement => ({
  requestId,
  accountId: 'acct_1',
  keyId: 'key_1',
  model: 'model-b',
  deployment: null,
  promptTokens: 1,
  completionTokens: 1,
  estimated: false,
  costMicros: 10,
  status: 'ok',
  latencyMs: 1,
  ttftMs: null,
  createdAt: 0,
});

describe('releases of settled holds that Redis refuses with a script error', () => {
  it('back off, are logged once at error level and counted, and a stop tries them once', async () => {
    const lines: { level: number; msg: string }[] = [];
    const logger = pino(
      { level: 'debug' },
      { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) },
    );
    const { redis, scripts } = scriptFailingRedis();
    const book = new RedisHoldBook({ redis, ledger: {} as LedgerRepo, logger, prefix: 't' });
    let retried = 0;
    book.retryReport = { retried: () => retried++, failing: () => {} };
    await book.start(() => {});
    // Twenty batches of different accounts committed in the ledger, none released in Redis.
    for (let i = 0; i < 20; i++)
      book.committed([{ ...settlement(`req_${i}`), accountId: `acct_${i}` }], new Map());
    await new Promise((resolve) => setTimeout(resolve, 4_500));
    const during = scripts();
    // Without backoff every heartbeat (1 s) retries every batch: 20 + 4 × 20 tries. With it, rounds wait out
    // a growing delay and stop after ten refusals.
    assert.ok(during <= 20 + 10, `${during} script calls in 4.5 s for 20 batches`);
    const stopped = performance.now();
    await book.close();
    assert.ok(performance.now() - stopped < 1_000, 'the stop tries each once and does not loop');
    assert.ok(scripts() - during <= 10, 'a stop tries a few waiting releases, once each');
    const loud = lines.filter(
      (line) => line.level >= 50 && line.msg.startsWith('settled holds not released'),
    );
    assert.equal(loud.length, 1, 'one error line for the episode, not one per try');
    assert.ok(retried >= 20, 'every failed try is counted');
  });
});
