// Instructions per non-streamed request, counted by valgrind's callgrind: unlike CPU time, not moved by other
// load on a shared machine. `node bench/request-instructions.ts --build=DIR …` (each DIR a checkout with
// node_modules; this checkout if none is given), `--requests=N` (default 1500), `--warmup=N` (default 1500),
// `--connections=N` (default 16), `--no-bare`; `--stream` (with `--chunks=N`, default 20) counts whole streams that the
// mock sends at once instead of whole answers. The mock upstream runs natively; the bare node:http proxy and each build run
// under callgrind, one after another, each as two processes: one serves the warm-up, the other the warm-up and N
// more requests, and the difference of their totals is the N requests' (start-up and stop cancel out; callgrind
// writes a dump asked for by callgrind_control only once the process runs again, so the totals at exit are used).
// Node under valgrind runs some 50 times slower, and so does its time: a 10-ms settlement window holds fewer
// requests than at full speed, so the settlement's share is larger than on a real run.
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { send, type Target } from './lib/load.ts';
import { startMock } from './lib/mock.ts';
import { profiledBody } from './lib/options.ts';
import type { Started } from './lib/processes.ts';
import { startBareProxy } from './lib/bare.ts';
import { startTollgate } from './lib/tollgate.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const option = (name: string): string[] =>
  process.argv.filter((a) => a.startsWith(`--${name}=`)).map((a) => a.slice(name.length + 3));
const BUILDS = option('build').length > 0 ? option('build') : [ROOT];
const REQUESTS = Number(option('requests')[0] ?? 1_500);
const WARMUP = Number(option('warmup')[0] ?? 1_500);
const CONNECTIONS = Number(option('connections')[0] ?? 16);
const BODY = JSON.stringify(profiledBody());
const UNIT = process.argv.includes('--stream') ? 'stream' : 'request';
/** `--no-bare`: the builds alone (counts are comparable across runs: another run's bare proxy will do). */
const BARE = !process.argv.includes('--no-bare');
const OUT = mkdtempSync(join(tmpdir(), 'tollgate-callgrind-'));
const VALGRIND = [
  'valgrind',
  '--tool=callgrind',
  '--smc-check=all-non-file',
  `--callgrind-out-file=${OUT}/callgrind.out.%p`,
];

/** `count` requests on `connections` connections; throws on any answer but 200. */
async function sendMany(target: Target, count: number, connections = CONNECTIONS): Promise<void> {
  const pool = new Pool(target.origin, { connections, pipelining: 1 });
  const body = BODY;
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

/** The instructions a process ran in all, from the dump callgrind writes as it exits. */
function totalOf(pid: number): number {
  const total = /^totals: (\d+)/m.exec(readFileSync(join(OUT, `callgrind.out.${pid}`), 'utf8'));
  if (!total) throw new Error(`callgrind wrote no totals for ${pid}`);
  return Number(total[1]);
}

/**
 * Instructions per request of one gateway: two processes started alike, one serving the warm-up and one the
 * warm-up and REQUESTS more; the difference of their totals is the REQUESTS' (start-up and stop cancel out).
 */
async function measure(
  name: string,
  start: () => Promise<{ target: Target; process: Started }>,
): Promise<number> {
  const startedAt = performance.now();
  const [short, long] = await Promise.all([start(), start()]);
  console.log(`${name}: started under callgrind in ${((performance.now() - startedAt) / 1000).toFixed(0)} s`);
  await Promise.all([sendMany(short.target, WARMUP), sendMany(long.target, WARMUP + REQUESTS)]);
  await Promise.all([ended(short.process), ended(long.process)]);
  const perRequest = (totalOf(long.process.pid) - totalOf(short.process.pid)) / REQUESTS;
  console.log(`${name}: ${(perRequest / 1e6).toFixed(3)} M instructions/${UNIT}`);
  return perRequest;
}

/** Ends a process under valgrind and waits as long as it takes (its dump is written on the way out). */
async function ended(started: Started): Promise<void> {
  const exited = once(started.child, 'exit');
  started.child.kill('SIGTERM');
  await exited;
}

async function main(): Promise<void> {
  const { process: mock, port } = await startMock();
  const results: [string, number][] = [];
  const dirs: string[] = [];
  try {
    if (BARE)
      results.push([
        'bare node:http proxy',
        await measure('bare node:http proxy', async () => {
          const bare = await startBareProxy(port, VALGRIND, 1_800_000);
          return { process: bare.process, target: bare.target };
        }),
      ]);
    for (const root of BUILDS) {
      const commit = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD']).toString().trim();
      const name = root === ROOT ? `${commit} (this)` : commit;
      results.push([
        name,
        await measure(name, async () => {
          const started = await startTollgate(port, [], root, VALGRIND, 1_800_000);
          dirs.push(started.dir);
          return started;
        }),
      ]);
    }
  } finally {
    await mock.stop();
    for (const dir of [OUT, ...dirs]) rmSync(dir, { recursive: true, force: true });
  }
  console.log(`\n| target | M instructions/${UNIT} | ÷ bare proxy |\n|---|---:|---:|`);
  for (const [name, perRequest] of results)
    console.log(
      `| ${name} | ${(perRequest / 1e6).toFixed(3)} | ${BARE ? (perRequest / results[0]![1]).toFixed(2) : '–'}× |`,
    );
}

await main();
