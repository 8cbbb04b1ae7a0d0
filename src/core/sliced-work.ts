/**
 * CPU-heavy work that one request can ask for (counting a long prompt's tokens, parsing a large body) is done in
 * steps, under one budget of event-loop time shared by every request in the process. A budget per request
 * would not bound the loop: five long prompts whose next slices were all due in the same turn held it for five
 * slices at once, and fifty would hold it for fifty.
 *
 * The budget is renewed once per event-loop turn (in its check phase). Work asked for while the budget lasts
 * and no other work waits runs at once, so a normal request pays no promise and no turn; the rest waits in a
 * queue that is worked through, one step per job in turn, as the budget allows. A step that takes milliseconds
 * by itself (decoding or parsing a 4 MiB body) is announced by yielding HEAVY before it: it runs only on a
 * fresh budget and uses it up. A turn of the loop thus spends on this work at most about two budgets, or two
 * heavy steps, whatever the number of requests.
 */

/** Milliseconds of sliced work per budget. */
const BUDGET_MS = 4;

/** Yielded before a step that takes milliseconds by itself. */
export const HEAVY = 'heavy';
/** What a step yields: HEAVY before a heavy step, nothing before a light one. */
export type Yielded = typeof HEAVY | undefined;

interface Job {
  steps: Generator<Yielded, unknown>;
  heavyNext: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

const waiting: Job[] = [];
/** Milliseconds of work done since the budget was last renewed. */
let spent = 0;
let renewalScheduled = false;

/**
 * Runs `steps` (a generator that yields between steps of at most a few milliseconds) to its end: its value at
 * once when the budget allows, else a promise of it. An error thrown by a step is thrown, or rejects.
 */
export function runSliced<T>(steps: Generator<Yielded, T>): T | Promise<T> {
  const job: Job = { steps, heavyNext: false, resolve: ignore, reject: ignore };
  if (waiting.length === 0) {
    for (let step = tryStep(job); step !== undefined; step = tryStep(job))
      if (step.done) return step.value as T;
  }
  return new Promise<T>((resolve, reject) => {
    job.resolve = resolve as (value: unknown) => void;
    job.reject = reject;
    waiting.push(job);
    scheduleRenewal();
  });
}

const ignore = (): void => {};

/** Runs the job's next step if the budget has room for it (a heavy step needs a fresh one), else undefined. */
function tryStep(job: Job): IteratorResult<Yielded, unknown> | undefined {
  if (spent >= BUDGET_MS || (job.heavyNext && spent > 0)) return undefined;
  const heavy = job.heavyNext;
  const started = performance.now();
  try {
    const step = job.steps.next();
    job.heavyNext = !step.done && step.value === HEAVY;
    return step;
  } finally {
    spent = heavy ? BUDGET_MS : spent + performance.now() - started;
    scheduleRenewal();
  }
}

function scheduleRenewal(): void {
  if (renewalScheduled) return;
  renewalScheduled = true;
  setImmediate(renew);
}

/** A new budget, spent on the waiting jobs one step each in turn; where it ran out, the next budget goes on. */
function renew(): void {
  renewalScheduled = false;
  spent = 0;
  let progressed = true;
  while (progressed && waiting.length > 0) {
    progressed = false;
    for (let at = 0; at < waiting.length;) {
      if (spent >= BUDGET_MS) {
        waiting.push(...waiting.splice(0, at));
        return;
      }
      const job = waiting[at]!;
      let step: IteratorResult<Yielded, unknown> | undefined;
      try {
        step = tryStep(job);
      } catch (error) {
        waiting.splice(at, 1);
        job.reject(error);
        continue;
      }
      if (step === undefined) at++;
      else if (step.done) {
        waiting.splice(at, 1);
        job.resolve(step.value);
        progressed = true;
      } else {
        at++;
        progressed = true;
      }
    }
  }
}
