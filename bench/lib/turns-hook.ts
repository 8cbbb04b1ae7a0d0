// Preloaded into a gateway (`node --import bench/lib/turns-hook.ts …`) by bench/turn-ledger.ts: counts what the
// process schedules, whatever the build. SIGUSR2 starts a count (from zero); the next SIGUSR2 ends it and writes
// the counts as JSON to the file `TURNS_HOOK_FILE` names. Counted: async resources by type (async_hooks' `init`:
// PROMISE, TickObject for process.nextTick, Microtask for queueMicrotask, Immediate, Timeout with its delay, the
// sockets' write requests…), timers refreshed (`Timeout.refresh`, which re-arms without a new resource) and
// cleared, immediates cleared, and undici's own timers (its `setFastTimeout`, resolved from the entry point so
// that each checkout's undici is the one counted). With `TURNS_SITES=1` each count is also kept by the code that
// made it (three stack frames outside Node's internals), which costs far more than the counting itself.
import { createHook } from 'node:async_hooks';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isMainThread } from 'node:worker_threads';

const file = process.env['TURNS_HOOK_FILE'];
if (isMainThread && file !== undefined) {
  const sites = process.env['TURNS_SITES'] === '1';
  let counting = false;
  let counts = new Map<string, number>();
  let bySite = new Map<string, number>();
  const siteOf = (): string => {
    const holder: { stack?: string } = {};
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 24;
    Error.captureStackTrace(holder);
    Error.stackTraceLimit = limit;
    const frames = (holder.stack ?? '')
      .split('\n')
      .slice(1)
      .map((line) => line.trim().replace(/^at /, ''))
      .filter((line) => !line.includes('turns-hook.ts') && !line.includes('node:internal/async_hooks'));
    const outside = frames.filter((line) => !line.includes('node:internal'));
    const shown = (outside.length > 0 ? outside : frames).slice(0, 3);
    return shown.map((line) => line.replace(/\(?(file:\/\/)?\/[^()]*\/(node_modules\/)?/, '(')).join(' < ');
  };
  const count = (name: string): void => {
    if (!counting) return;
    counts.set(name, (counts.get(name) ?? 0) + 1);
    if (sites) {
      const key = `${name} @ ${siteOf()}`;
      bySite.set(key, (bySite.get(key) ?? 0) + 1);
    }
  };

  const hook = createHook({
    init(_id, type, _trigger, resource) {
      if (type === 'Timeout')
        count(`Timeout ${(resource as { _idleTimeout?: number })._idleTimeout ?? '?'} ms`);
      else count(type);
    },
  });

  const probe = setTimeout(() => {}, 1);
  const timeoutPrototype = Object.getPrototypeOf(probe) as { refresh(this: unknown): unknown };
  clearTimeout(probe);
  // eslint-disable-next-line @typescript-eslint/unbound-method -- always called with the original `this`
  const refresh = timeoutPrototype.refresh;
  timeoutPrototype.refresh = function (this: { _idleTimeout?: number }) {
    count(`Timeout.refresh ${this._idleTimeout ?? '?'} ms`);
    return refresh.call(this);
  };
  const clear = globalThis.clearTimeout;
  globalThis.clearTimeout = ((timer?: { _idleTimeout?: number } | string | number) => {
    if (timer !== undefined && timer !== null)
      count(`clearTimeout ${typeof timer === 'object' ? (timer._idleTimeout ?? '?') : '?'} ms`);
    clear(timer as NodeJS.Timeout);
  }) as typeof clearTimeout;
  const clearImmediateOriginal = globalThis.clearImmediate;
  globalThis.clearImmediate = (immediate?: NodeJS.Immediate) => {
    if (immediate !== undefined && immediate !== null) count('clearImmediate');
    clearImmediateOriginal(immediate);
  };

  try {
    const require = createRequire(process.argv[1] ?? import.meta.url);
    const timers = require('undici/lib/util/timers.js') as Record<string, (...args: unknown[]) => unknown>;
    for (const name of ['setFastTimeout', 'clearFastTimeout', 'setTimeout', 'clearTimeout']) {
      const original = timers[name];
      if (typeof original !== 'function') continue;
      timers[name] = (...args: unknown[]) => {
        count(`undici timers.${name}${name.startsWith('set') ? ` ${String(args[1])} ms` : ''}`);
        return original(...args);
      };
    }
  } catch {
    // No undici beside the entry point (the bare proxy): nothing of it to count.
  }

  process.on('SIGUSR2', () => {
    if (!counting) {
      counts = new Map();
      bySite = new Map();
      counting = true;
      hook.enable();
      return;
    }
    counting = false;
    hook.disable();
    writeFileSync(
      file,
      JSON.stringify({
        counts: Object.fromEntries(counts),
        sites: Object.fromEntries([...bySite].sort((a, b) => b[1] - a[1])),
      }),
    );
  });
}
