// Instructions per stream of the stream fast path alone (bench/lib/mini-relay.ts: each checkout's OpenAI provider,
// SSE sinks and relay on a bare node:http server, none of the request's fixed work), counted by callgrind, beside
// the bare node:http proxy relaying the same streams. Load-independent, and quick to start under valgrind (no
// store, no Fastify). `node bench/relay-instructions.ts --build=DIR …` (default: this checkout), `--chunks=N`
// (default 20), `--interval=MS` (the mock's pause between chunks, default 0: all at once, so reads batch; 1 or more
// makes each chunk its own read), `--streams=N` (default 400), `--warmup=N` (default 400),
// `--connections=N` (default 1), `--no-bare`. As in bench/request-instructions.ts, each target runs as two
// processes, one serving the warm-up and one the warm-up and N more streams; the difference of their totals is
// the N streams' (start-up and stop cancel out). Only user-space instructions are counted, not the kernel's.
import { once } from 'node:events';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { startBareProxy } from './lib/bare.ts';
import { CHAT_BODY, send, type Target } from './lib/load.ts';
import { startMock } from './lib/mock.ts';
import { startPinned, type Started } from './lib/processes.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const option = (name: string): string[] =>
  process.argv.filter((a) => a.startsWith(`--${name}=`)).map((a) => a.slice(name.length + 3));
const BUILDS = option('build').length > 0 ? option('build') : [ROOT];
const CHUNKS = Number(option('chunks')[0] ?? 20);
const INTERVAL = Number(option('interval')[0] ?? 0);
const STREAMS = Number(option('streams')[0] ?? 400);
const WARMUP = Number(option('warmup')[0] ?? 400);
const CONNECTIONS = Number(option('connections')[0] ?? 1);
const BARE = !process.argv.includes('--no-bare');
const BODY = JSON.stringify({ ...CHAT_BODY, stream: true, mock_chunks: CHUNKS, mock_interval_ms: INTERVAL });
const OUT = mkdtempSync(join(tmpdir(), 'tollgate-relay-callgrind-'));
const VALGRIND = [
  'valgrind',
  '--tool=callgrind',
  '--smc-check=all-non-file',
  `--callgrind-out-file=${OUT}/callgrind.out.%p`,
];

async function sendMany(target: Target, count: number): Promise<void> {
  const pool = new Pool(target.origin, { connections: CONNECTIONS, pipelining: 1 });
  let left = count;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (left-- > 0) {
        const status = await send(pool, target, BODY);
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

async function ended(started: Started): Promise<void> {
  const exited = once(started.child, 'exit');
  started.child.kill('SIGTERM');
  await exited;
}

async function measure(
  name: string,
  start: () => Promise<{ target: Target; process: Started }>,
): Promise<number> {
  const [short, long] = await Promise.all([start(), start()]);
  await Promise.all([sendMany(short.target, WARMUP), sendMany(long.target, WARMUP + STREAMS)]);
  await Promise.all([ended(short.process), ended(long.process)]);
  const perStream = (totalOf(long.process.pid) - totalOf(short.process.pid)) / STREAMS;
  console.log(`${name}: ${(perStream / 1e6).toFixed(4)} M instructions/stream`);
  return perStream;
}

async function startRelay(mockPort: number, root: string): Promise<{ target: Target; process: Started }> {
  const [command, ...prefix] = [...VALGRIND, process.execPath];
  const started = await startPinned(
    0,
    command,
    [...prefix, '--max-semi-space-size=4', join(ROOT, 'bench/lib/mini-relay.ts')],
    { ROOT: root, PROXY_TARGET: `http://127.0.0.1:${mockPort}`, PORT: '0' },
    /listening (\d+)/,
    600_000,
  );
  return {
    process: started,
    target: {
      name: root,
      origin: `http://127.0.0.1:${started.match[1]}`,
      path: '/v1/chat/completions',
      headers: {},
    },
  };
}

async function main(): Promise<void> {
  const { process: mock, port } = await startMock();
  const results: [string, number][] = [];
  try {
    if (BARE)
      results.push([
        'bare node:http proxy',
        await measure('bare node:http proxy', () => startBareProxy(port, VALGRIND, 600_000)),
      ]);
    for (const root of BUILDS) {
      const commit = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD']).toString().trim();
      const dirty = execFileSync('git', ['-C', root, 'status', '--porcelain', 'src']).toString().trim();
      const name = `${commit}${dirty ? '+' : ''} ${root === ROOT ? '(this)' : root}`;
      results.push([name, await measure(name, () => startRelay(port, root))]);
    }
  } finally {
    await mock.stop();
    rmSync(OUT, { recursive: true, force: true });
  }
  console.log(
    `\n${CHUNKS} chunks ${INTERVAL} ms apart, ${CONNECTIONS} connection(s), ${STREAMS} streams\n| target | M instructions/stream | ÷ bare proxy |\n|---|---:|---:|`,
  );
  for (const [name, perStream] of results)
    console.log(
      `| ${name} | ${(perStream / 1e6).toFixed(4)} | ${BARE ? (perStream / results[0]![1]).toFixed(2) : '–'}× |`,
    );
}

await main();
