// Instructions per non-streamed request, counted by valgrind's callgrind: unlike CPU time, not moved by other
// load on a shared machine. `node bench/request-instructions.ts --build=DIR …` (each DIR a checkout with
// node_modules; this checkout if none is given), `--requests=N` (default 1500), `--warmup=N` (default 1500),
// `--connections=N` (default 16), `--no-bare`; `--stream` (with `--chunks=N`, default 20) counts whole streams that
// the mock sends at once instead of whole answers, `--model=` names another model (bench/lib/options.ts). The mock
// upstream runs natively; the bare node:http proxy and each build run under callgrind, one after another, each as
// two processes (bench/lib/callgrind.ts). Node under valgrind runs some 50 times slower, and so does its time: a
// 10-ms settlement window holds fewer requests than at full speed, so the settlement's share is larger than on a
// real run. For Anthropic-type streams beside a bare proxy relaying the same events: bench/stream-instructions.ts.
import { rmSync } from 'node:fs';
import { buildName, Callgrind, printTable, sendMany } from './lib/callgrind.ts';
import { startMock } from './lib/mock.ts';
import { profiledBody } from './lib/options.ts';
import { startBareProxy } from './lib/bare.ts';
import { startTollgate } from './lib/tollgate.ts';
import type { Target } from './lib/load.ts';

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

async function main(): Promise<void> {
  const callgrind = new Callgrind();
  const run = (target: Target, count: number): Promise<void> => sendMany(target, BODY, count, CONNECTIONS);
  const { process: mock, port } = await startMock();
  const results: [string, number][] = [];
  const dirs: string[] = [];
  try {
    if (BARE) {
      const name = 'bare node:http proxy';
      const start = (): ReturnType<typeof startBareProxy> =>
        startBareProxy(port, callgrind.command, 1_800_000);
      results.push([name, await callgrind.perRequest(name, start, run, WARMUP, REQUESTS, UNIT)]);
    }
    for (const root of BUILDS) {
      const name = buildName(root, ROOT);
      const start = async (): ReturnType<typeof startTollgate> => {
        const started = await startTollgate(port, [], root, callgrind.command, 1_800_000);
        dirs.push(started.dir);
        return started;
      };
      results.push([name, await callgrind.perRequest(name, start, run, WARMUP, REQUESTS, UNIT)]);
    }
  } finally {
    await mock.stop();
    callgrind.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
  printTable(
    `${UNIT === 'stream' ? 'streams' : 'whole answers'}, ${CONNECTIONS} connections`,
    UNIT,
    results,
    BARE,
  );
}

await main();
