// Which of a gateway's threads run, and how often they are woken, per request: `node bench/thread-wakes.ts`
// (`--stream`, `--chunks=N`, `--connections=N` as in request-cpu.ts; default one connection, a lone request),
// `--variant=F,G` adds this checkout started with node flags F and G after its start script's, `--warm=S` seconds
// of warm-up per target (default 10), `--slices=N` of `--slice-ms=MS` (default 6 of 2,000) with the targets taking
// turns. For each thread name (MainThread, V8Worker, DelayedTaskSche…) it prints, per request, the CPU it used and
// the times the kernel put it on a core (/proc/PID/task/TID/schedstat: nanoseconds run, timeslices) and the times it
// blocked (voluntary context switches): on one pinned core each timeslice of another thread is a switch away from
// the event loop. `--trace=F,G` starts every Tollgate
// with V8 trace flags (e.g. --trace-gc,--trace-opt) and prints the trace lines written during the slices, by kind
// (`--trace-out=DIR` keeps them, one file per target).
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { closedLoop, type Target } from './lib/load.ts';
import { option, optionValues, profiledBody } from './lib/options.ts';
import { startMock } from './lib/mock.ts';
import { CAN_PIN, type Started } from './lib/processes.ts';
import { startBareProxy } from './lib/bare.ts';
import { startTollgate } from './lib/tollgate.ts';

const CONNECTIONS = Number(option('connections') ?? 1);
const WARM_MS = Number(option('warm') ?? 10) * 1_000;
const SLICES = Number(option('slices') ?? 6);
const SLICE_MS = Number(option('slice-ms') ?? 2_000);
const VARIANTS = optionValues('variant').map((flags) => flags.split(',').filter(Boolean));
const TRACE = (option('trace') ?? '').split(',').filter(Boolean);
const REQUEST = profiledBody();
const TRACE_OUT = option('trace-out');

interface ThreadTotals {
  runNs: number;
  timeslices: number;
  /** Times the thread blocked (a wait, a read with nothing to read): each a later wake-up. */
  sleeps: number;
}

const NONE: ThreadTotals = { runNs: 0, timeslices: 0, sleeps: 0 };

/** Nanoseconds on a core and timeslices of every live thread of `pid`, summed by thread name. */
function threadsOf(pid: number): Map<string, ThreadTotals> {
  const byName = new Map<string, ThreadTotals>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const [runNs, , timeslices] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8')
        .trim()
        .split(' ')
        .map(Number);
      const sleeps = /voluntary_ctxt_switches:\s+(\d+)/.exec(
        readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8'),
      );
      const total = byName.get(name) ?? { ...NONE };
      total.runNs += runNs!;
      total.timeslices += timeslices!;
      total.sleeps += Number(sleeps?.[1] ?? 0);
      byName.set(name, total);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return byName;
}

/** The V8 trace lines of `text` counted by kind: `gc Scavenge`, `gc Mark-Compact`, `marking`, `compiling method`… */
function traceKinds(text: string): Map<string, number> {
  const kinds = new Map<string, number>();
  for (const line of text.split('\n')) {
    const gc = / ms: ([\w-]+)/.exec(line);
    const kind = gc ? `gc ${gc[1]}` : /^\[([a-z]+(?: [a-z]+)?)/.exec(line)?.[1];
    if (kind) kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  return kinds;
}

async function main(): Promise<void> {
  if (CAN_PIN) execFileSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });
  const { process: mock, port: mockPort } = await startMock();
  const { process: bare, target: bareTarget } = await startBareProxy(mockPort);
  const started: { process: Started; target: Target; dir?: string }[] = [
    { process: bare, target: bareTarget },
  ];
  try {
    for (const flags of [[], ...VARIANTS]) {
      const tollgate = await startTollgate(mockPort, [...TRACE, ...flags]);
      started.push({ ...tollgate, target: { ...tollgate.target, name: ['Tollgate', ...flags].join(' ') } });
    }
    for (const { target } of started) await closedLoop(target, CONNECTIONS, WARM_MS, REQUEST);
    const totals = new Map(
      started.map((s) => [s.target.name, { requests: 0, threads: new Map<string, ThreadTotals>() }]),
    );
    const traceFrom = new Map(started.map((s) => [s.target.name, s.process.output().length]));
    for (let slice = 0; slice < SLICES; slice++) {
      for (const { target } of slice % 2 === 0 ? started : [...started].reverse()) {
        const total = totals.get(target.name)!;
        const before = threadsOf(target.pid!);
        const run = await closedLoop(target, CONNECTIONS, SLICE_MS, REQUEST);
        if (run.non200 > 0) throw new Error(`${target.name}: ${run.non200} answers other than 200`);
        total.requests += run.requests;
        for (const [name, after] of threadsOf(target.pid!)) {
          const was = before.get(name) ?? NONE;
          const sum = total.threads.get(name) ?? { ...NONE };
          sum.runNs += after.runNs - was.runNs;
          sum.timeslices += after.timeslices - was.timeslices;
          sum.sleeps += after.sleeps - was.sleeps;
          total.threads.set(name, sum);
        }
      }
    }
    for (const { target, process: child } of started) {
      const { requests, threads } = totals.get(target.name)!;
      const cpu = [...threads.values()].reduce((sum, t) => sum + t.runNs, 0) / requests / 1_000;
      console.log(`\n${target.name}: ${requests} requests, ${cpu.toFixed(1)} µs of CPU each (all threads)`);
      console.log('  thread            µs/request  timeslices/request  sleeps/request');
      for (const [name, t] of [...threads].sort((a, b) => b[1].runNs - a[1].runNs))
        if (t.timeslices > 0)
          console.log(
            `  ${name.padEnd(16)} ${(t.runNs / requests / 1_000).toFixed(1).padStart(11)} ${(t.timeslices / requests).toFixed(2).padStart(19)} ${(t.sleeps / requests).toFixed(2).padStart(15)}`,
          );
      if (TRACE.length > 0 && target !== bareTarget) {
        const text = child.output().slice(traceFrom.get(target.name));
        const kinds = traceKinds(text);
        if (TRACE_OUT) writeFileSync(join(TRACE_OUT, `${target.name.replace(/\W+/g, '_')}.trace.txt`), text);
        console.log(
          `  trace lines in the slices, per request: ${[...kinds].map(([k, n]) => `${k} ${(n / requests).toFixed(3)}`).join(', ')}`,
        );
      }
    }
  } finally {
    await Promise.all([mock.stop(), ...started.map((s) => s.process.stop())]);
    for (const s of started) if (s.dir) rmSync(s.dir, { force: true, recursive: true });
  }
}

await main();
