// Instructions per streamed answer, counted by valgrind's callgrind (the stream variant of
// bench/request-instructions.ts, whose method it follows: two processes per gateway, one serving the warm-up and
// one the warm-up and N more streams; the difference of their totals is the N streams'). Not moved by other load.
// `node bench/stream-instructions.ts --build=DIR …` (each DIR a checkout with node_modules; this checkout if none
// is given), `--upstream=anthropic|openai` (default anthropic: Tollgate translates the mock's Messages events, the
// bare proxy relays them), `--chunks=20|200` (default 20), `--streams=N` (default 600), `--warmup=N` (default
// 600), `--connections=N` (default 1), `--no-bare`. Each stream is read to its end and must answer 200.
import { rmSync } from 'node:fs';
import { buildName, Callgrind, printTable, sendMany } from './lib/callgrind.ts';
import { CHAT_BODY, type Target } from './lib/load.ts';
import { startMock } from './lib/mock.ts';
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

async function main(): Promise<void> {
  const callgrind = new Callgrind();
  const { process: mock, port } = await startMock();
  const results: [string, number][] = [];
  const dirs: string[] = [];
  try {
    if (BARE) {
      const name = 'bare node:http proxy';
      const body = JSON.stringify(BARE_REQUEST.body);
      const run = (target: Target, count: number): Promise<void> =>
        sendMany(target, body, count, CONNECTIONS);
      const start = async (): ReturnType<typeof startBareProxy> => {
        const bare = await startBareProxy(port, callgrind.command, 1_800_000);
        return { process: bare.process, target: { ...bare.target, path: BARE_REQUEST.path } };
      };
      results.push([name, await callgrind.perRequest(name, start, run, WARMUP, STREAMS, 'stream')]);
    }
    const body = JSON.stringify(TOLLGATE_BODY);
    const run = (target: Target, count: number): Promise<void> => sendMany(target, body, count, CONNECTIONS);
    for (const root of BUILDS) {
      const name = buildName(root, ROOT);
      const start = async (): ReturnType<typeof startTollgate> => {
        const started = await startTollgate(port, [], root, callgrind.command, 1_800_000);
        dirs.push(started.dir);
        return started;
      };
      results.push([name, await callgrind.perRequest(name, start, run, WARMUP, STREAMS, 'stream')]);
    }
  } finally {
    await mock.stop();
    callgrind.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
  printTable(`${UPSTREAM}, ${CHUNKS} chunks, ${CONNECTIONS} at once`, 'stream', results, BARE);
}

await main();
