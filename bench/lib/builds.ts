import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { startBareProxy } from './bare.ts';
import type { Target } from './load.ts';
import { startMock } from './mock.ts';
import { CAN_PIN } from './processes.ts';
import { startTollgate } from './tollgate.ts';

/** The checkout this harness runs from. */
export const ROOT = new URL('../..', import.meta.url).pathname;

/** A build's name in a side-by-side run: its commit, and "(this)" for this checkout even when its tree has changes. */
export function nameOf(dir: string): string {
  const commit = execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD']).toString().trim();
  return dir === ROOT ? `${commit} (this)` : commit;
}

/** The middle value (the upper one of an even count). */
export const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** The mock, the bare proxy and each Tollgate build of a side-by-side run, started; `stop` ends them all. */
export interface SideBySide {
  mockPort: number;
  bare: Target;
  /** Each build dir's Tollgate, then this checkout's once per variant of node flags; named by nameOf. */
  builds: Target[];
  stop(): Promise<void>;
}

/**
 * Pins this process to core 1 (beside the mock), starts the mock upstream, the bare proxy, a Tollgate for each
 * of `dirs` and one of this checkout for each of `variants` (node flags added to its start script's).
 */
export async function startSideBySide(dirs: string[], variants: string[][]): Promise<SideBySide> {
  if (CAN_PIN) execFileSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });
  const { process: mock, port: mockPort } = await startMock();
  const { process: bare, target: bareTarget } = await startBareProxy(mockPort);
  const started: Awaited<ReturnType<typeof startTollgate>>[] = [];
  const names: string[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all([mock.stop(), bare.stop(), ...started.map((b) => b.process.stop())]);
    for (const b of started) rmSync(b.dir, { force: true, recursive: true });
  };
  try {
    for (const [dir, flags, name] of [
      ...dirs.map((dir) => [dir, [], nameOf(dir)] as const),
      ...variants.map((flags) => [ROOT, flags, `${nameOf(ROOT)} ${flags.join(' ')}`] as const),
    ]) {
      started.push(await startTollgate(mockPort, [...flags], dir));
      names.push(name);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    mockPort,
    bare: bareTarget,
    builds: started.map((b, i) => ({ ...b.target, name: names[i]! })),
    stop,
  };
}
