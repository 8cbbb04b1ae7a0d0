// What Tollgate allocates per request: `npm run bench:alloc` (add `--stream` for 20-chunk streams sent at once by
// the mock, `--chunks=N`, `--model=model-s` for the simulator, `--connections=N`, default 50; `--baseline=DIR` for
// another checkout measured the same way after this one). Starts the mock upstream and Tollgate with the inspector,
// drives closed-loop connections while V8's sampling heap profiler records every allocation, collected or not,
// and prints the bytes allocated per request by package or source file and by function. Allocation depends on the
// machine's load far less than CPU time (only through how reads batch), so two builds compare on a busy machine
// where CPU time cannot: compare a file's own figure rather than the total. `--relay` measures the stream fast path
// alone (bench/lib/mini-relay.ts: no request fixed work) instead of Tollgate; give it `--stream`. `--survivors`
// leaves out what a scavenge collected: what remains is what outlived the young generation (promoted, then freed
// by a major GC, or still alive), the allocation a major GC has to mark and sweep.
import { rmSync } from 'node:fs';
import { closedLoop } from './lib/load.ts';
import { option, profiledBody } from './lib/options.ts';
import { startMock } from './lib/mock.ts';
import { startPinned } from './lib/processes.ts';
import { startTollgate } from './lib/tollgate.ts';

const BODY = profiledBody();
const CONNECTIONS = Number(option('connections') ?? 50);
const ROOT = new URL('..', import.meta.url).pathname;

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

/** A small client of the inspector protocol over its WebSocket. */
async function inspector(
  url: string,
): Promise<{ send(method: string, params?: object): Promise<unknown>; close(): void }> {
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.addEventListener('open', resolve);
    socket.addEventListener('error', reject);
  });
  let lastId = 0;
  const waiting = new Map<number, (result: unknown) => void>();
  socket.addEventListener('message', (message) => {
    const { id, result } = JSON.parse(String(message.data)) as { id?: number; result?: unknown };
    if (id !== undefined) waiting.get(id)?.(result);
  });
  return {
    send: (method, params = {}) =>
      new Promise<unknown>((resolve) => {
        const id = ++lastId;
        waiting.set(id, resolve);
        socket.send(JSON.stringify({ id, method, params }));
      }),
    close: () => socket.close(),
  };
}

const groupOf = (url: string, functionName: string): string => {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.includes('/src/')) return `src/${url.split('/src/')[1]}`;
  return url || functionName || '(native)';
};

/** The mini relay of `root`'s stream fast path (bench/lib/mini-relay.ts), as startTollgate answers. */
async function startRelay(port: number, flags: string[], root: string): ReturnType<typeof startTollgate> {
  const started = await startPinned(
    0,
    process.execPath,
    [
      ...flags,
      '--max-semi-space-size=4',
      process.env['RELAY'] ?? new URL('lib/mini-relay.ts', import.meta.url).pathname,
    ],
    { ROOT: root, PROXY_TARGET: `http://127.0.0.1:${port}`, PORT: '0' },
    /listening (\d+)/,
  );
  const origin = `http://127.0.0.1:${started.match[1]}`;
  return {
    process: started,
    target: { name: 'relay', origin, path: '/v1/chat/completions', headers: {} },
    dir: '',
  };
}

async function measure(root: string): Promise<void> {
  const { process: mock, port } = await startMock();
  const start = process.argv.includes('--relay') ? startRelay : startTollgate;
  const tollgate = await start(port, ['--inspect=127.0.0.1:0'], root);
  try {
    const url = /ws:\/\/\S+/.exec(tollgate.process.output())?.[0];
    if (!url) throw new Error('Tollgate printed no inspector address');
    const session = await inspector(url);
    await closedLoop(tollgate.target, CONNECTIONS, 2_000, BODY);
    await session.send('HeapProfiler.enable');
    await session.send('HeapProfiler.startSampling', {
      samplingInterval: 256,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: !process.argv.includes('--survivors'),
    });
    const run = await closedLoop(tollgate.target, CONNECTIONS, Number(option('seconds') ?? 3) * 1000, BODY);
    const { profile } = (await session.send('HeapProfiler.stopSampling')) as { profile: { head: HeapNode } };
    session.close();
    const groups = new Map<string, number>();
    const functions = new Map<string, number>();
    let total = 0;
    const walk = (node: HeapNode): void => {
      const { functionName, url, lineNumber } = node.callFrame;
      const group = groupOf(url, functionName);
      groups.set(group, (groups.get(group) ?? 0) + node.selfSize);
      const name = `${functionName || '(anonymous)'}  ${group}:${lineNumber + 1}`;
      functions.set(name, (functions.get(name) ?? 0) + node.selfSize);
      total += node.selfSize;
      for (const child of node.children) walk(child);
    };
    walk(profile.head);
    const print = (title: string, table: Map<string, number>, rows: number): void => {
      console.log(`\n${title}\n   bytes/req`);
      for (const [name, bytes] of [...table].sort((a, b) => b[1] - a[1]).slice(0, rows))
        console.log(`  ${(bytes / run.requests).toFixed(0).padStart(9)}  ${name}`);
    };
    console.log(
      `\n${root}: ${run.requests} requests, ${(total / run.requests / 1024).toFixed(1)} KiB allocated each (sampled every 256 bytes)`,
    );
    print('by package or file', groups, 20);
    print('by function', functions, 30);
  } finally {
    await Promise.all([mock.stop(), tollgate.process.stop()]);
    if (tollgate.dir !== '') rmSync(tollgate.dir, { recursive: true, force: true });
  }
}

await measure(ROOT);
const baseline = option('baseline');
if (baseline !== undefined) await measure(baseline);
