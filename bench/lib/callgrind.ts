// What the instruction-count scripts (bench/*-instructions.ts) share: valgrind's callgrind around a server
// process, and the count per request or stream as the difference of two processes started alike, one serving the
// warm-up and one the warm-up and N more (start-up and stop cancel out; callgrind writes a dump asked for by
// callgrind_control only once the process runs again, so the totals it writes at exit are used). Only user-space
// instructions are counted, not the kernel's; unlike CPU time, the counts are not moved by other load.
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { send, type Target } from './load.ts';
import type { Started } from './processes.ts';

/** A started server under callgrind, and where to send to it. */
export interface Counted {
  target: Target;
  process: Started;
}

export class Callgrind {
  readonly #out = mkdtempSync(join(tmpdir(), 'tollgate-callgrind-'));
  /** The command line prefix that runs a program under callgrind, its dump in this run's folder. */
  readonly command = [
    'valgrind',
    '--tool=callgrind',
    '--smc-check=all-non-file',
    `--callgrind-out-file=${this.#out}/callgrind.out.%p`,
  ];

  /**
   * Instructions per request of one server: `start` is called twice; one process is sent `warmup` requests, the
   * other `warmup + count`, each by `run`; the difference of their totals, divided by `count`.
   */
  async perRequest(
    name: string,
    start: () => Promise<Counted>,
    run: (target: Target, requests: number) => Promise<void>,
    warmup: number,
    count: number,
    unit: string,
  ): Promise<number> {
    const startedAt = performance.now();
    const [short, long] = await Promise.all([start(), start()]);
    console.log(
      `${name}: started under callgrind in ${((performance.now() - startedAt) / 1000).toFixed(0)} s`,
    );
    await Promise.all([run(short.target, warmup), run(long.target, warmup + count)]);
    await Promise.all([ended(short.process), ended(long.process)]);
    const per = (this.#totalOf(long.process.pid) - this.#totalOf(short.process.pid)) / count;
    console.log(`${name}: ${(per / 1e6).toFixed(4)} M instructions/${unit}`);
    return per;
  }

  /** Removes the dumps. */
  close(): void {
    rmSync(this.#out, { recursive: true, force: true });
  }

  /** The instructions a process ran in all, from the dump callgrind writes as it exits. */
  #totalOf(pid: number): number {
    const total = /^totals: (\d+)/m.exec(readFileSync(join(this.#out, `callgrind.out.${pid}`), 'utf8'));
    if (!total) throw new Error(`callgrind wrote no totals for ${pid}`);
    return Number(total[1]);
  }
}

/** `count` requests of `body` on `connections` connections, each read to its end; throws on any answer but 200. */
export async function sendMany(
  target: Target,
  body: string,
  count: number,
  connections: number,
): Promise<void> {
  const pool = new Pool(target.origin, { connections, pipelining: 1 });
  let left = count;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (left-- > 0) {
        const status = await send(pool, target, body);
        if (status !== 200) throw new Error(`${target.name} answered ${status}`);
      }
    }),
  );
  await pool.close();
}

/** Ends a process under valgrind and waits as long as it takes (its dump is written on the way out). */
async function ended(started: Started): Promise<void> {
  const exited = once(started.child, 'exit');
  started.child.kill('SIGTERM');
  await exited;
}

/** A checkout's name in a table: its commit, `+` if its tracked files differ from it, and `(this)` for this one. */
export function buildName(root: string, thisRoot: string): string {
  const commit = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD']).toString().trim();
  const dirty = execFileSync('git', ['-C', root, 'status', '--porcelain', '--untracked-files=no'])
    .toString()
    .trim();
  return `${commit}${dirty ? '+' : ''} ${root === thisRoot ? '(this)' : root}`;
}

/** The results as a table, each also as a multiple of the first row's (the bare proxy's) when `bare`. */
export function printTable(title: string, unit: string, results: [string, number][], bare: boolean): void {
  console.log(`\n${title}\n| target | M instructions/${unit} | ÷ bare proxy |\n|---|---:|---:|`);
  for (const [name, per] of results)
    console.log(
      `| ${name} | ${(per / 1e6).toFixed(3)} | ${bare ? (per / results[0]![1]).toFixed(2) : '–'}× |`,
    );
}
