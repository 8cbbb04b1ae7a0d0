// Instructions per stream of the stream fast path alone (bench/lib/mini-relay.ts: each checkout's OpenAI provider,
// SSE sinks and relay on a bare node:http server, none of the request's fixed work), counted by callgrind, beside
// the bare node:http proxy relaying the same streams. Load-independent, and quick to start under valgrind (no
// store, no Fastify). `node bench/relay-instructions.ts --build=DIR …` (default: this checkout), `--chunks=N`
// (default 20), `--interval=MS` (the mock's pause between chunks, default 0: all at once, so reads batch; 1 or more
// makes each chunk its own read), `--streams=N` (default 400), `--warmup=N` (default 400),
// `--connections=N` (default 1), `--no-bare`. As in bench/request-instructions.ts, each target runs as two
// processes, one serving the warm-up and one the warm-up and N more streams; the difference of their totals is
// the N streams' (start-up and stop cancel out). Only user-space instructions are counted, not the kernel's.
import { join } from 'node:path';
import { startBareProxy } from './lib/bare.ts';
import { buildName, Callgrind, type Counted, printTable, sendMany } from './lib/callgrind.ts';
import { CHAT_BODY, type Target } from './lib/load.ts';
import { startMock } from './lib/mock.ts';
import { startPinned } from './lib/processes.ts';

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

async function startRelay(mockPort: number, root: string, launcher: string[]): Promise<Counted> {
  const [command, ...prefix] = [...launcher, process.execPath];
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
  const callgrind = new Callgrind();
  const run = (target: Target, count: number): Promise<void> => sendMany(target, BODY, count, CONNECTIONS);
  const { process: mock, port } = await startMock();
  const results: [string, number][] = [];
  try {
    if (BARE) {
      const name = 'bare node:http proxy';
      const start = (): Promise<Counted> => startBareProxy(port, callgrind.command, 600_000);
      results.push([name, await callgrind.perRequest(name, start, run, WARMUP, STREAMS, 'stream')]);
    }
    for (const root of BUILDS) {
      const name = buildName(root, ROOT);
      const start = (): Promise<Counted> => startRelay(port, root, callgrind.command);
      results.push([name, await callgrind.perRequest(name, start, run, WARMUP, STREAMS, 'stream')]);
    }
  } finally {
    await mock.stop();
    callgrind.close();
  }
  printTable(
    `${CHUNKS} chunks ${INTERVAL} ms apart, ${CONNECTIONS} connection(s), ${STREAMS} streams`,
    'stream',
    results,
    BARE,
  );
}

await main();
