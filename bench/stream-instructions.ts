// Instructions per streamed answer, counted by valgrind's callgrind (the stream variant of
// bench/request-instructions.ts, whose method it follows: two processes per gateway, one serving the warm-up and
// one the warm-up and N more streams; the difference of their totals is the N streams'). Not moved by other load.
// `node bench/stream-instructions.ts --build=DIR …` (each DIR a checkout with node_modules; this checkout if none
// is given), `--upstream=anthropic|openai` (default anthropic: Tollgate translates the mock's Messages events, the
// bare proxy relays them), `--chunks=20|200` (default 20), `--streams=N` (default 600), `--warmup=N` (default
// 600), `--connections=N` (default 1), `--no-bare`. Each stream is read to its end and must answer 200.
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { CHAT_BODY, send, type Target } from './lib/load.ts';
import { startMock } from './lib/mock.ts';
import type { Started } from './lib/processes.ts';
import { startBareProxy } from './lib/bare.ts';
import { startTollgate } from './lib/tollgate.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const option = (name: string): string[] =>
  process.argv.filter((a) => a.startsWith(`--${name}=`)).map((a) => a.slice(name.length + 3));
const BUILDS = option('build').length > 0 ? option('build') : [ROOT];
const UPSTREAM = option('upstream')[0] ?? 'anthropic';
const CHUNKS = Number(option('chunks')[0] ?? 20);
const STREAMS = Number(option('streams')[0] ?? 600);
const WARMUP = Number(option('warmup')[0] ?? 600);
const CONNECTIONS = Number(option('connections')[0] ?? 1);
const BARE = !process.argv.includes('--no-bare');
const OUT = mkdtempSync(join(tmpdir(), 'tollgate-callgrind-'));
const VALGRIND = [
  'valgrind',
  '--tool=callgrind',
  '--smc-check=all-non-file',
  `--callgrind-out-file=${OUT}/callgrind.out.%p`,
];

/** The request each side is sent: the same upstream events (as bench/run.ts's stream cases). */
const fast = { mock_chunks: CHUNKS, mock_interval_ms: 0 };
const TOLLGATE_BODY =
  UPSTREAM === 'anthropic'
    ? { ...CHAT_BODY, model: `model-a${CHUNKS}`, stream: true }
    : { ...CHAT_BODY, model: 'model-b', stream: true, ...fast };
const BARE_REQUEST =
  UPSTREAM === 'anthropic'
    ? { path: '/v1/messages', body: { ...CHAT_BODY, model: `mock-c${CHUNKS}-i0`, stream: true } }
    : { path: '/v1/chat/completions', body: { ...CHAT_BODY, model: 'mock-model', stream: true, ...fast } };

async function sendMany(target: Target, body: object, count: number): Promise<void> {
  const pool = new Pool(target.origin, { connections: CONNECTIONS, pipelining: 1 });
  const text = JSON.stringify(body);
  let left = count;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (left-- > 0) {
        const status = await send(pool, target, text);
        if (status !== 200) throw new Error(`${target.name} answered ${status}`);
      }
    }),
  );
  await pool.close();
}

function totalOf(pid: number): number {
  const total = /^totals: (\d+)/m.exec(readFileSync(join(OUT, `callgrind.out.${pid}`), 'utf8'));
  if (!total) throw new Error(`callgrind wrote no totals for ${pid}`);
  return Number(total[1]);
}

async function measure(
  name: string,
  body: object,
  start: () => Promise<{ target: Target; process: Started }>,
): Promise<number> {
  const startedAt = performance.now();
  const [short, long] = await Promise.all([start(), start()]);
  console.log(`${name}: started under callgrind in ${((performance.now() - startedAt) / 1000).toFixed(0)} s`);
  await Promise.all([sendMany(short.target, body, WARMUP), sendMany(long.target, body, WARMUP + STREAMS)]);
  await Promise.all([ended(short.process), ended(long.process)]);
  const perStream = (totalOf(long.process.pid) - totalOf(short.process.pid)) / STREAMS;
  console.log(`${name}: ${(perStream / 1e6).toFixed(3)} M instructions/stream`);
  return perStream;
}

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
        await measure('bare node:http proxy', BARE_REQUEST.body, async () => {
          const bare = await startBareProxy(port, VALGRIND, 1_800_000);
          return { process: bare.process, target: { ...bare.target, path: BARE_REQUEST.path } };
        }),
      ]);
    for (const root of BUILDS) {
      const commit = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD']).toString().trim();
      const dirty = execFileSync('git', ['-C', root, 'status', '--porcelain', '--untracked-files=no'])
        .toString()
        .trim();
      const name = `${commit}${dirty ? '+' : ''}${root === ROOT ? ' (this)' : ''}`;
      results.push([
        name,
        await measure(name, TOLLGATE_BODY, async () => {
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
  console.log(
    `\n${UPSTREAM}, ${CHUNKS} chunks, ${CONNECTIONS} at once\n| target | M instructions/stream | ÷ bare proxy |\n|---|---:|---:|`,
  );
  for (const [name, perStream] of results)
    console.log(
      `| ${name} | ${(perStream / 1e6).toFixed(3)} | ${BARE ? (perStream / results[0]![1]).toFixed(2) : '–'}× |`,
    );
}

await main();
