// Preloaded into a gateway (`node --import bench/lib/loop-hook.ts …`) by `npm run bench -- --only=soak`: once a
// second it appends one line (its Unix time first) to the file `LOOP_HOOK_LOG` names, whatever the build: the event loop's delay in that
// second (p99 and max, ms), the heap in use (MB), the GC pauses V8 reported in it (count and ms, minor and major), and
// the most main-thread CPU time between two ticks of a 10-ms timer (ms, with that interval's wall time and the whole
// process's CPU time in it, GC threads included): the longest event-loop turn in CPU, which another process on the
// core does not lengthen, unlike the loop's delay; on a core of its own, the process's CPU is what that turn's wait is.
// The hook adds a one-second and a 10-ms timer and a 10-ms-resolution histogram; it changes nothing else.
import { appendFileSync } from 'node:fs';
import { monitorEventLoopDelay, PerformanceObserver, constants } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { isMainThread } from 'node:worker_threads';

const file = process.env['LOOP_HOOK_LOG'];
if (isMainThread && file !== undefined) {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  const gc = { minor: 0, minorMs: 0, major: 0, majorMs: 0, other: 0, otherMs: 0 };
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) {
        gc.minor += 1;
        gc.minorMs += entry.duration;
      } else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
        gc.major += 1;
        gc.majorMs += entry.duration;
      } else {
        gc.other += 1;
        gc.otherMs += entry.duration;
      }
    }
  }).observe({ entryTypes: ['gc'] });
  // The longest run of main-thread CPU between two ticks (a busy turn, a GC step or pause within it).
  const turn = { cpuMs: 0, wallMs: 0, processMs: 0 };
  let tickCpu = process.threadCpuUsage();
  let tickProcess = process.cpuUsage();
  let tickAt = performance.now();
  setInterval(() => {
    const cpu = process.threadCpuUsage();
    const whole = process.cpuUsage();
    const at = performance.now();
    const cpuMs = (cpu.user - tickCpu.user + cpu.system - tickCpu.system) / 1_000;
    const processMs = (whole.user - tickProcess.user + whole.system - tickProcess.system) / 1_000;
    if (cpuMs > turn.cpuMs) {
      turn.cpuMs = cpuMs;
      turn.wallMs = at - tickAt;
    }
    turn.processMs = Math.max(turn.processMs, processMs);
    tickCpu = cpu;
    tickProcess = whole;
    tickAt = at;
  }, 10).unref();
  // The process's start (ms since the epoch), which V8's --trace-gc times count from.
  appendFileSync(file, `# origin_ms=${performance.timeOrigin.toFixed(0)}\n`);
  appendFileSync(
    file,
    'unix_s\tloop_p99_ms\tloop_max_ms\theap_mb\tminor\tminor_ms\tmajor\tmajor_ms\tother\tother_ms\tturn_cpu_ms\tturn_wall_ms\tturn_process_ms\n',
  );
  setInterval(() => {
    const heap = getHeapStatistics().used_heap_size / 1e6;
    appendFileSync(
      file,
      [
        (Date.now() / 1000).toFixed(0),
        (histogram.percentile(99) / 1e6).toFixed(0),
        (histogram.max / 1e6).toFixed(0),
        heap.toFixed(0),
        gc.minor,
        gc.minorMs.toFixed(0),
        gc.major,
        gc.majorMs.toFixed(0),
        gc.other,
        gc.otherMs.toFixed(0),
        turn.cpuMs.toFixed(0),
        turn.wallMs.toFixed(0),
        turn.processMs.toFixed(0),
      ].join('\t') + '\n',
    );
    histogram.reset();
    for (const key of Object.keys(gc) as (keyof typeof gc)[]) gc[key] = 0;
    turn.cpuMs = 0;
    turn.wallMs = 0;
    turn.processMs = 0;
  }, 1_000).unref();
}
