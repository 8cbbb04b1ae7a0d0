// Instructions per stream, counted by valgrind's callgrind: unlike CPU time, unaffected by other load on a shared
// machine. `node bench/instructions.ts [--baseline=DIR] [--streams=N] [--cases=20x1,200x1,20x50,200x50,sim]`
// runs the mock upstream natively and each gateway (the bare node:http proxy, Tollgate, and the baseline checkout's
// Tollgate) under callgrind, one after another; for each case it sends a warm-up, zeroes the counters, sends N
// whole streams (the mock sending every chunk at once) and reads the instructions counted. Slow: Node under
// valgrind runs some 50 times slower, so the counts are of a few hundred streams. JIT-compiled code is counted as
// any other; the counts are of the gateway process alone.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { CHAT_BODY, send, type Target } from './lib/load.ts';
import { startMock } from './lib/mock.ts';
import { startPinned, type Started } from './lib/processes.ts';
import { startTollgate } from './lib/tollgate.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const option = (name: string): string | undefined =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const BASELINE = option('baseline');
const STREAMS = Number(option('streams') ?? 100);
const CASES = (option('cases') ?? '20x1,200x1,20x50,sim').split(',');
const OUT = mkdtempSync(join(tmpdir(), 'tollgate-callgrind-'));
const VALGRIND = [
  'valgrind',
  '--tool=callgrind',
  '--smc-check=all-non-file',
  `--callgrind-out-file=${OUT}/callgrind.out.%p`,
];

/** `count` whole streams on `connections` connections. */
async function streams(target: Target, connections: number, count: number, body: object): Promise<number> {
  const pool = new Pool(target.origin, { connections, pipelining: 1 });
  const text = JSON.stringify(body);
  let left = count;
  let non200 = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (left-- > 0) if ((await send(pool, target, text).catch(() => 0)) !== 200) non200++;
    }),
  );
  await pool.close();
  return non200;
}

/** The instructions the process has run since its counters were last zeroed (the dump is written later). */
async function counted(pid: number): Promise<number> {
  const dumps = (): string[] => readdirSync(OUT).filter((name) => name.startsWith(`callgrind.out.${pid}`));
  const before = new Set(dumps());
  execFileSync('callgrind_control', ['--dump', String(pid)], { stdio: 'ignore' });
  for (let waited = 0; waited < 300; waited++) {
    for (const name of dumps().filter((found) => !before.has(found))) {
      const total = /^totals: (\d+)/m.exec(readFileSync(join(OUT, name), 'utf8'));
      if (total) return Number(total[1]);
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  throw new Error(`callgrind wrote no dump for ${pid}`);
}

interface Side {
  name: string;
  target: Target;
  process: Started;
  model: (chunks: number) => object;
}

const body = (model: string, chunks: number, extra: object = {}): object => ({
  ...CHAT_BODY,
  model,
  stream: true,
  mock_chunks: chunks,
  mock_interval_ms: 0,
  ...extra,
});

async function main(): Promise<void> {
  const { process: mock, port } = await startMock();
  const sides: Side[] = [];
  try {
    const bare = await startPinned(
      0,
      VALGRIND[0]!,
      [...VALGRIND.slice(1), process.execPath, join(ROOT, 'bench/bare-proxy.ts')],
      { PROXY_TARGET: `http://127.0.0.1:${port}` },
      /listening (\d+)/,
      600_000,
    );
    sides.push({
      name: 'bare node:http proxy',
      process: bare,
      target: {
        name: 'bare',
        origin: `http://127.0.0.1:${bare.match[1]}`,
        path: '/v1/chat/completions',
        headers: {},
      },
      model: (chunks) => body('mock-model', chunks),
    });
    for (const [name, root] of [['Tollgate', ROOT], ...(BASELINE ? [['before', BASELINE]] : [])] as const) {
      const started = await startTollgate(port, [], root, VALGRIND, 600_000);
      sides.push({
        name,
        process: started.process,
        target: started.target,
        model: (chunks) => body('model-b', chunks),
      });
    }
    for (const name of CASES) {
      const simulator = name === 'sim';
      const [chunks, connections] = simulator ? [16, 1] : (name.split('x').map(Number) as [number, number]);
      const row: string[] = [];
      for (const side of sides) {
        const request =
          simulator && side.name !== 'bare node:http proxy'
            ? { ...CHAT_BODY, model: 'model-s', stream: true, max_tokens: 16 }
            : side.model(chunks);
        await streams(side.target, connections, Math.max(20, connections * 2), request);
        execFileSync('callgrind_control', ['--zero', String(side.process.pid)], { stdio: 'ignore' });
        const non200 = await streams(side.target, connections, STREAMS, request);
        const perStream = (await counted(side.process.pid)) / STREAMS;
        row.push(`${side.name} ${(perStream / 1000).toFixed(0)}k${non200 ? ` (${non200} non-200)` : ''}`);
      }
      const [bareCount, ...rest] = row.map((cell) => Number(/ (\d+)k/.exec(cell)![1]));
      console.log(
        `${simulator ? 'simulator (16 tokens; bare: the mock’s 16 chunks)' : `${chunks} chunks, ${connections} at once`}: ${row.join(', ')} instructions/stream; ratio ${rest.map((n) => (n / bareCount!).toFixed(2)).join(' / ')}`,
      );
    }
  } finally {
    await Promise.all([mock.stop(), ...sides.map((side) => side.process.stop())]);
    rmSync(OUT, { recursive: true, force: true });
  }
}

await main();
