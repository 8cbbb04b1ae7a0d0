import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HEAVY, runSliced, type Yielded } from './sliced-work.ts';

/** Keeps the thread busy for `ms` milliseconds of wall time, as a step of real work would. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/** Numbers the event loop's turns: one increment in each check phase, queued before any work of the test's. */
function turnCounter(): { readonly turn: number; stop(): void } {
  let turn = 0;
  let running = true;
  const tick = (): void => {
    turn++;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  return {
    get turn() {
      return turn;
    },
    stop: () => void (running = false),
  };
}

/** A job of `count` steps of `stepMs` each, noting the turn each step ran in; its value is its name. */
function* job(
  name: string,
  count: number,
  stepMs: number,
  turns: number[],
  clock: { readonly turn: number },
  heavy = false,
): Generator<Yielded, string> {
  for (let i = 0; i < count; i++) {
    if (heavy) yield HEAVY;
    busy(stepMs);
    turns.push(clock.turn);
    yield;
  }
  return name;
}

/** The most steps that ran in any one turn. */
function mostInOneTurn(turns: number[]): number {
  const perTurn = new Map<number, number>();
  for (const turn of turns) perTurn.set(turn, (perTurn.get(turn) ?? 0) + 1);
  return Math.max(...perTurn.values());
}

/** Waits until a renewal has found nothing to do, so the next test starts on a fresh budget. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

describe('work sliced under one budget per event-loop turn', () => {
  it('returns a short job’s value at once, without a promise', async () => {
    await settle();
    const turns: number[] = [];
    const value = runSliced(job('short', 3, 0, turns, { turn: 0 }));
    assert.equal(value, 'short');
    assert.equal(turns.length, 3);
  });

  it('bounds one turn’s work whatever the number of jobs, and finishes every job with its own value', async () => {
    await settle();
    const clock = turnCounter();
    const turns: number[] = [];
    // Twenty jobs of 1 ms steps asked for in one turn: a budget per job would run twenty steps or more a turn.
    const values = Array.from({ length: 20 }, (_, i) =>
      Promise.resolve(runSliced(job(`job ${i}`, 6, 1, turns, clock))),
    );
    assert.deepEqual(
      await Promise.all(values),
      Array.from({ length: 20 }, (_, i) => `job ${i}`),
    );
    clock.stop();
    assert.equal(turns.length, 120);
    // A 4 ms budget of 1 ms steps: at most five steps, in the turn that asked and in each renewal after.
    assert.ok(mostInOneTurn(turns) <= 5, `${mostInOneTurn(turns)} steps ran in one turn`);
  });

  it('takes the waiting jobs in turn: none is left behind while the others finish', async () => {
    await settle();
    const clock = turnCounter();
    const finishedIn: number[] = [];
    // The first job takes the turn's budget at once; seven more of ten 1 ms steps wait. A budget has room for
    // four steps, so the waiting jobs must take turns across budgets.
    const first = runSliced(job('first', 10, 1, [], clock));
    const waiting = Array.from({ length: 7 }, (_, i) =>
      Promise.resolve(runSliced(job(`job ${i}`, 10, 1, [], clock))).then(() => finishedIn.push(clock.turn)),
    );
    await Promise.all([first, ...waiting]);
    clock.stop();
    const spread = Math.max(...finishedIn) - Math.min(...finishedIn);
    assert.ok(spread <= 2, `the first waiting job finished ${spread} turns before the last`);
  });

  it('runs a heavy step only on a fresh budget, and no other step after it in that budget', async () => {
    await settle();
    const clock = turnCounter();
    const heavyTurns: number[] = [];
    const lightTurns: number[] = [];
    const heavy = [1, 2, 3].map((i) => runSliced(job(`heavy ${i}`, 3, 2, heavyTurns, clock, true)));
    const light = runSliced(job('light', 30, 0.5, lightTurns, clock));
    await Promise.all([...heavy, light]);
    clock.stop();
    assert.equal(heavyTurns.length, 9);
    assert.equal(mostInOneTurn(heavyTurns), 1, 'two heavy steps ran in one turn');
    for (const turn of heavyTurns) assert.ok(!lightTurns.includes(turn), `a light step shared turn ${turn}`);
  });

  it('throws a step’s error when the job ran at once, and rejects with it when the job had waited', async () => {
    await settle();
    function* failing(): Generator<Yielded, never> {
      yield;
      throw new Error('step failed');
    }
    assert.throws(() => runSliced(failing()), /step failed/);
    const clock = turnCounter();
    const blocker = runSliced(job('blocker', 8, 1, [], clock));
    const waited = runSliced(failing());
    assert.ok(waited instanceof Promise, 'the job waited behind the blocker');
    await assert.rejects(waited, /step failed/);
    assert.equal(await blocker, 'blocker');
    clock.stop();
  });
});
