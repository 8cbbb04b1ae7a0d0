// A lone stream's time to first token, split into the gateway's own stages and measured inside the process, so
// that builds can be compared on a loaded machine where client-side milliseconds mean little:
// `node bench/ttft-stages.ts [--streams=N] DIR…` starts the mock upstream and each checkout's Tollgate with
// bench/lib/stage-hook.ts preloaded, serves whole non-streamed requests for a second, then N lone streams per
// build (the builds taking turns; the mock sends a role chunk, then a content chunk 20 ms later, as the harness's
// TTFT streams do), and prints per build, in µs, A (the request parsed → the upstream request written) and C (the
// first content chunk read from the upstream → written to the client): the first stream the process served, and
// the min / p25 / p50 of the streams after the tenth. The harness's TTFT is A + C + the sockets' hops. `--bare`
// measures the bare proxy (bench/bare-proxy.ts) with the same hook, first.
import { execFileSync } from 'node:child_process';
import { Pool } from 'undici';
import { CHAT_BODY, closedLoop, oneStream, type StreamStats } from './lib/load.ts';
import { startMock } from './lib/mock.ts';
import { CAN_PIN } from './lib/processes.ts';
import { startBareProxy } from './lib/bare.ts';
import { startTollgate } from './lib/tollgate.ts';

const STREAMS = Number(process.argv.find((a) => a.startsWith('--streams='))?.slice(10) ?? 60);
const DIRS = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const BARE = process.argv.includes('--bare');
const HOOK = new URL('./lib/stage-hook.ts', import.meta.url).pathname;
const BODY = JSON.stringify({ ...CHAT_BODY, stream: true, mock_chunks: 2, mock_interval_ms: 20 });

const quantile = (values: number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
};
const micros = (ms: number): string => (ms * 1000).toFixed(0);

async function main(): Promise<void> {
  if (DIRS.length === 0) throw new Error('usage: node bench/ttft-stages.ts [--streams=N] [--bare] DIR…');
  if (CAN_PIN) execFileSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });
  const { process: mock, port } = await startMock();
  process.env['STAGE_UPSTREAM_PORT'] = String(port);
  const builds = [];
  try {
    if (BARE) {
      // The proxy takes no node flags of ours: the hook goes in through NODE_OPTIONS, for it alone.
      process.env['NODE_OPTIONS'] = `--import ${HOOK}`;
      const bare = await startBareProxy(port);
      delete process.env['NODE_OPTIONS'];
      builds.push({ root: 'bare node:http proxy', ...bare });
    }
    for (const dir of DIRS)
      builds.push({ root: dir, ...(await startTollgate(port, ['--import', HOOK], dir)) });
    for (const build of builds) await closedLoop(build.target, 8, 1_000);
    const pools = builds.map((build) => new Pool(build.target.origin, { connections: 1, pipelining: 1 }));
    for (let i = 0; i < STREAMS; i++)
      for (const [j, build] of builds.entries()) {
        const stats: StreamStats = {
          ttft: [],
          gaps: [],
          events: [],
          maxEventsPerRead: 0,
          non200: 0,
          completed: 0,
        };
        await oneStream(pools[j]!, build.target, BODY, stats);
        if (stats.non200 > 0) throw new Error(`${build.root} answered a stream with an error`);
      }
    await Promise.all(pools.map((pool) => pool.close()));
  } finally {
    await mock.stop();
    for (const build of builds) await build.process.stop();
  }
  for (const build of builds) {
    const rows = build.process
      .output()
      .split('\n')
      .filter((line) => line.startsWith('STAGES '))
      .map((line) => line.split(' ').slice(1).map(Number) as [number, number]);
    const warm = rows.slice(10);
    const column = (k: 0 | 1): string =>
      [0, 0.25, 0.5]
        .map((q) =>
          micros(
            quantile(
              warm.map((row) => row[k]),
              q,
            ),
          ),
        )
        .join(' / ');
    console.log(`${build.root}: ${rows.length} lone streams, µs`);
    console.log(`  first stream: A ${micros(rows[0]?.[0] ?? NaN)}, C ${micros(rows[0]?.[1] ?? NaN)}`);
    console.log(`  after the tenth, min / p25 / p50: A ${column(0)}; C ${column(1)}`);
  }
}

await main();
