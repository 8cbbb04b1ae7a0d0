// Where Tollgate's CPU goes: `npm run bench:profile` (add `--seconds=N`, default 10; `--stream` profiles streams
// of 20 chunks sent at once by the mock, through the chat-completions fast path, instead of whole answers;
// `--chunks=N` for N chunks, `--model=model-s` for the simulator; `--connections=N`, default 16: 1 shows what a
// request costs alone; `--build=DIR` profiles another checkout's Tollgate, e.g. an older commit's). Starts the mock upstream and Tollgate with `--cpu-prof`, as the harness does, drives N
// closed-loop connections, stops Tollgate, and prints the self time of the measured seconds' samples (start-up,
// warm-up and the stop left out) grouped by package or source file, then the top functions. The .cpuprofile stays
// in bench/profiles/ (open it in Chrome DevTools or speedscope for a flame graph).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CHAT_BODY, closedLoop } from './lib/load.ts';
import { startMock } from './lib/mock.ts';
import { CAN_PIN, cpuSeconds } from './lib/processes.ts';
import { startTollgate } from './lib/tollgate.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const OUT = join(ROOT, 'bench/profiles');
const SECONDS = Number(process.argv.find((a) => a.startsWith('--seconds='))?.slice(10) ?? 10);
const option = (name: string): string | undefined =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const BODY = process.argv.includes('--stream')
  ? {
      ...CHAT_BODY,
      model: option('model') ?? CHAT_BODY.model,
      stream: true,
      mock_chunks: Number(option('chunks') ?? 20),
      mock_interval_ms: 0,
    }
  : CHAT_BODY;
const CONNECTIONS = Number(option('connections') ?? 16);
const BUILD = option('build') ?? ROOT;

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  endTime: number;
}

/** A package, a source file of ours, a Node internal module, or a native bucket such as (garbage collector). */
function groupOf({ url, functionName }: ProfileNode['callFrame']): string {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.includes('/src/')) return `src/${url.split('/src/')[1]}`;
  return url || functionName || '(native)';
}

/**
 * Only the measured run's samples: the `runMicros` before the profile's last `stopMicros` (the stop, whose final
 * checkpoint and exit are not per-request work).
 */
function report(
  profile: Profile,
  requests: number,
  cpuMicros: number,
  { runMicros, stopMicros }: { runMicros: number; stopMicros: number },
): void {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfTime = new Map<number, number>();
  const runEnd = profile.endTime - stopMicros;
  let at = profile.endTime;
  for (let i = profile.samples.length - 1; i >= 0 && at >= runEnd - runMicros; i--) {
    const delta = profile.timeDeltas[i] ?? 0;
    if (at <= runEnd) selfTime.set(profile.samples[i]!, (selfTime.get(profile.samples[i]!) ?? 0) + delta);
    at -= delta;
  }
  const groups = new Map<string, number>();
  const functions = new Map<string, number>();
  let busy = 0;
  for (const [id, time] of selfTime) {
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === '(idle)') continue;
    busy += time;
    const group = groupOf(frame);
    groups.set(group, (groups.get(group) ?? 0) + time);
    const name = `${frame.functionName || '(anonymous)'}  ${group}:${frame.lineNumber + 1}`;
    functions.set(name, (functions.get(name) ?? 0) + time);
  }
  const perRequest = cpuMicros / requests;
  const print = (title: string, table: Map<string, number>, rows: number): void => {
    console.log(`\n${title}\n  share   µs/req`);
    for (const [name, time] of [...table].sort((a, b) => b[1] - a[1]).slice(0, rows)) {
      const share = time / busy;
      console.log(
        `  ${(share * 100).toFixed(1).padStart(5)}%  ${(share * perRequest).toFixed(1).padStart(6)}  ${name}`,
      );
    }
  };
  console.log(
    `${requests} requests, ${perRequest.toFixed(1)} µs of CPU each (shares are of the busy samples)`,
  );
  print('by package or file', groups, 30);
  print('by function', functions, 40);
}

async function main(): Promise<void> {
  if (CAN_PIN) execFileSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  const { process: mock, port: mockPort } = await startMock();
  const tollgate = await startTollgate(mockPort, ['--cpu-prof', `--cpu-prof-dir=${OUT}`], BUILD);
  try {
    await closedLoop(tollgate.target, CONNECTIONS, 3_000, BODY);
    const before = cpuSeconds(tollgate.process.pid);
    const started = performance.now();
    const run = await closedLoop(tollgate.target, CONNECTIONS, SECONDS * 1_000, BODY);
    const cpuMicros = (cpuSeconds(tollgate.process.pid) - before) * 1e6;
    const ran = performance.now();
    await tollgate.process.stop();
    const measured = { runMicros: (ran - started) * 1_000, stopMicros: (performance.now() - ran) * 1_000 };
    // The main thread's profile is the largest; the checkpointer thread writes its own, nearly empty one.
    const files = readdirSync(OUT)
      .filter((name) => name.endsWith('.cpuprofile'))
      .map((name) => join(OUT, name))
      .sort((a, b) => statSync(b).size - statSync(a).size);
    if (!files[0]) throw new Error('Tollgate wrote no profile');
    report(JSON.parse(readFileSync(files[0], 'utf8')) as Profile, run.requests, cpuMicros, measured);
    console.log(`\nprofile: ${files[0]}`);
  } finally {
    await Promise.all([mock.stop(), tollgate.process.stop()]);
    rmSync(tollgate.dir, { recursive: true, force: true });
  }
}

await main();
