import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat's times (100 on every Linux the tests run on). */
const TICKS_PER_SECOND = 100;

/** The CPU time (user + system, ms) a process has used, from /proc/<pid>/stat. */
export function cpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return ((utime + stime) * 1000) / TICKS_PER_SECOND;
}

/** A process's resident memory in MiB, from /proc/<pid>/status. */
export function rssMiBOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
  return kib / 1024;
}

export interface IdleSample {
  /** The share of one core used over the window (0.05 is 5 %). */
  coreShare: number;
  /** RSS samples over the window, MiB, one a second. */
  rssMiB: number[];
}

/** Watches a process for `windowMs`: the CPU it used (share of a core) and its RSS each second. */
export async function sampleIdle(pid: number, windowMs: number): Promise<IdleSample> {
  const rssMiB = [rssMiBOf(pid)];
  const cpuStart = cpuMsOf(pid);
  const started = performance.now();
  while (performance.now() - started < windowMs) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    rssMiB.push(rssMiBOf(pid));
  }
  const coreShare = (cpuMsOf(pid) - cpuStart) / (performance.now() - started);
  return { coreShare, rssMiB };
}
