import { closedLoop, type Target } from './load.ts';
import { treeCpuSeconds } from './processes.ts';

/** One target's totals over the slices: requests served, seconds spent, its process's CPU seconds, non-200s. */
export interface SliceTotals {
  requests: number;
  seconds: number;
  cpuSeconds: number;
  non200: number;
}

/**
 * Closed-loop load on each target in turn, `slices` times, summing requests and gateway CPU per target: the
 * targets share the machine's slow and fast moments instead of one getting a whole slow stretch.
 */
export async function cpuSlices(
  targets: Target[],
  slices: number,
  sliceMs: number,
  connections = 16,
  request?: object,
): Promise<Map<string, SliceTotals>> {
  const totals = new Map(targets.map((t) => [t.name, { requests: 0, seconds: 0, cpuSeconds: 0, non200: 0 }]));
  for (let slice = 0; slice < slices; slice++) {
    for (const target of slice % 2 === 0 ? targets : [...targets].reverse()) {
      const total = totals.get(target.name)!;
      const cpuBefore = target.pid ? treeCpuSeconds(target.pid) : 0;
      const run = await closedLoop(target, connections, sliceMs, request);
      total.cpuSeconds += target.pid ? treeCpuSeconds(target.pid) - cpuBefore : NaN;
      total.requests += run.requests;
      total.seconds += run.seconds;
      total.non200 += run.non200;
    }
  }
  return totals;
}
