import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { backoffDelay, RetryEpisode } from './retry-episode.ts';

/** A logger that keeps its lines (level and message). */
function capture(): { logger: pino.Logger; lines: { level: number; msg: string }[] } {
  const lines: { level: number; msg: string }[] = [];
  const logger = pino(
    { level: 'debug' },
    { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) },
  );
  return { logger, lines };
}

describe('backoff with jitter', () => {
  it('doubles from the first delay, is capped, and waits between half and all of its ceiling', () => {
    const policy = { initialMs: 100, maxMs: 1_000 };
    assert.deepEqual(
      [0, 1, 2, 3, 4, 10, 60].map((attempt) => backoffDelay(attempt, policy, () => 1)),
      [100, 200, 400, 800, 1_000, 1_000, 1_000],
    );
    assert.deepEqual(
      [0, 1, 4].map((attempt) => backoffDelay(attempt, policy, () => 0)),
      [50, 100, 500],
    );
  });
});

describe('a retry episode', () => {
  it('logs its beginning once at warn for an outage, counts every retry, and its end once at info', () => {
    const { logger, lines } = capture();
    const counted: string[] = [];
    const failing: boolean[] = [];
    const episode = new RetryEpisode({
      loop: 'test-loop',
      logger,
      policy: { initialMs: 100, maxMs: 400 },
      report: { retried: (loop) => counted.push(loop), failing: (_loop, on) => failing.push(on) },
      message: 'the thing fails',
      random: () => 1,
    });
    const delays = [1, 2, 3, 4, 5].map(() => episode.failed(new Error('ECONNREFUSED'), true));
    assert.deepEqual(delays, [100, 200, 400, 400, 400]);
    assert.equal(counted.length, 5);
    episode.succeeded();
    episode.succeeded();
    assert.deepEqual(
      lines.map((line) => [line.level, line.msg]),
      [
        [40, 'the thing fails; retrying with backoff'],
        [30, 'the thing fails: succeeds again'],
      ],
    );
    assert.deepEqual(failing, [true, false]);
    assert.equal(episode.failed(new Error('again'), true), 100, 'a new episode starts from the first delay');
  });

  it('logs an error that is not an outage (a script error) at error level', () => {
    const { logger, lines } = capture();
    const episode = new RetryEpisode({ loop: 'x', logger, policy: { initialMs: 1, maxMs: 2 }, message: 'm' });
    for (let i = 0; i < 100; i++)
      episode.failed(new Error('ERR value is not an integer or out of range'), false);
    assert.deepEqual(
      lines.map((line) => line.level),
      [50],
    );
  });
});
