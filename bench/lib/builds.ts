import { execFileSync } from 'node:child_process';

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
