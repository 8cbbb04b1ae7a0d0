import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { closedLoop } from './load.ts';
import { cpuSeconds } from './processes.ts';
import { startTollgate } from './tollgate.ts';

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

/** A row of a summary: self time's share of the busy samples, and that share of the CPU per request. */
export interface Share {
  name: string;
  share: number;
  micros: number;
}

export interface ProfileSummary {
  requests: number;
  /** CPU per request of the profiled process (user + system, the profiler on). */
  perRequest: number;
  /** By package, source file of ours, Node internal module or native bucket, with each one's top functions. */
  groups: (Share & { functions: Share[] })[];
  functions: Share[];
  /** The main thread's .cpuprofile (for a flame graph in Chrome DevTools or speedscope). */
  file: string;
}

/** A package, a source file of ours, a Node internal module, or a native bucket such as (garbage collector). */
function groupOf({ url, functionName }: ProfileNode['callFrame']): string {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.includes('/src/')) return `src/${url.split('/src/')[1]}`;
  return url || functionName || '(native)';
}

const sorted = (table: Map<string, number>, busy: number, perRequest: number): Share[] =>
  [...table]
    .sort((a, b) => b[1] - a[1])
    .map(([name, time]) => ({ name, share: time / busy, micros: (time / busy) * perRequest }));

/**
 * Self time of the measured run's samples only: the `runMicros` before the profile's last `stopMicros` (the
 * stop, whose final checkpoint and exit are not per-request work), grouped and by function.
 */
function summarise(
  profile: Profile,
  requests: number,
  cpuMicros: number,
  { runMicros, stopMicros }: { runMicros: number; stopMicros: number },
  file: string,
): ProfileSummary {
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
  const inGroup = new Map<string, Map<string, number>>();
  let busy = 0;
  for (const [id, time] of selfTime) {
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === '(idle)') continue;
    busy += time;
    const group = groupOf(frame);
    groups.set(group, (groups.get(group) ?? 0) + time);
    const name = frame.functionName || '(anonymous)';
    const full = `${name}  ${group}:${frame.lineNumber + 1}`;
    functions.set(full, (functions.get(full) ?? 0) + time);
    const own = inGroup.get(group) ?? new Map<string, number>();
    own.set(name, (own.get(name) ?? 0) + time);
    inGroup.set(group, own);
  }
  const perRequest = cpuMicros / requests;
  return {
    requests,
    perRequest,
    groups: sorted(groups, busy, perRequest).map((group) => ({
      ...group,
      functions: sorted(inGroup.get(group.name)!, busy, perRequest),
    })),
    functions: sorted(functions, busy, perRequest),
    file,
  };
}

/**
 * Starts Tollgate with `--cpu-prof` into `outDir` (emptied first) against the running mock, drives `connections`
 * closed-loop connections sending `body` (3 s of warm-up, then `seconds` measured), stops it and summarises the
 * measured seconds' samples. The caller pins itself; Tollgate runs pinned to core 0 as in the harness.
 */
export async function profileTollgate(options: {
  mockPort: number;
  body: object;
  connections: number;
  seconds: number;
  outDir: string;
  /** The checkout whose Tollgate is profiled (this one by default). */
  build?: string | undefined;
}): Promise<ProfileSummary> {
  const { outDir, connections, body } = options;
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const tollgate = await startTollgate(
    options.mockPort,
    ['--cpu-prof', `--cpu-prof-dir=${outDir}`],
    options.build,
  );
  try {
    await closedLoop(tollgate.target, connections, 3_000, body);
    const before = cpuSeconds(tollgate.process.pid);
    const started = performance.now();
    const run = await closedLoop(tollgate.target, connections, options.seconds * 1_000, body);
    const cpuMicros = (cpuSeconds(tollgate.process.pid) - before) * 1e6;
    const ran = performance.now();
    await tollgate.process.stop();
    const measured = { runMicros: (ran - started) * 1_000, stopMicros: (performance.now() - ran) * 1_000 };
    // The main thread's profile is the largest; the checkpointer thread writes its own, nearly empty one.
    const files = readdirSync(outDir)
      .filter((name) => name.endsWith('.cpuprofile'))
      .map((name) => `${outDir}/${name}`)
      .sort((a, b) => statSync(b).size - statSync(a).size);
    if (!files[0]) throw new Error('Tollgate wrote no profile');
    const profile = JSON.parse(readFileSync(files[0], 'utf8')) as Profile;
    return summarise(profile, run.requests - run.non200, cpuMicros, measured, files[0]);
  } finally {
    await tollgate.process.stop();
    rmSync(tollgate.dir, { recursive: true, force: true });
  }
}
