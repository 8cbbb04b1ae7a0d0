import type { Clock } from '../../src/core/ids.ts';

/** A clock a test moves by hand. */
export interface TestClock {
  now: number;
  clock: Clock;
  advance(ms: number): void;
}

export function createTestClock(start: number = Date.now()): TestClock {
  const state: TestClock = {
    now: start,
    clock: () => state.now,
    advance(ms) {
      state.now += ms;
    },
  };
  return state;
}
