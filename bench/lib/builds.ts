import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { startBareProxy } from './bare.ts';
import type { Target } from './load.ts';
import { startMock } from './mock.ts';
import { CAN_PIN, type Started } from './processes.ts';
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
  const running: Started[] = [];
  const dataDirs: string[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(running.map((started) => started.stop()));
    for (const dir of dataDirs) rmSync(dir, { force: true, recursive: true });
  };
  try {
    const mock = await startMock();
    running.push(mock.process);
    const bare = await startBareProxy(mock.port);
    running.push(bare.process);
    const builds: Target[] = [];
    for (const [dir, flags, name] of [
      ...dirs.map((dir) => [dir, [], nameOf(dir)] as const),
      ...variants.map((flags) => [ROOT, flags, `${nameOf(ROOT)} ${flags.join(' ')}`] as const),
    ]) {
      const build = await startTollgate(mock.port, [...flags], dir);
      running.push(build.process);
      dataDirs.push(build.dir);
      builds.push({ ...build.target, name });
    }
    return { mockPort: mock.port, bare: bare.target, builds, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
