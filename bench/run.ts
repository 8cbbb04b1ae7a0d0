// The benchmark harness: `npm run bench` (add `--quick` for one short round, `--no-peer` to skip Portkey,
// `--soak=SECONDS` to hold the slow streams that long (a long soak is `--soak=600`; 30 s without it),
// `--slow-streams=N` for N of them instead of 10,000 (0 leaves them out), `--streams-only` for the stream sections
// alone, which then print and are not written to docs/performance.md; with it, `--cases=WORD` keeps the
// CPU-per-stream cases whose upstream names WORD, e.g. `--cases=anthropic`; `--only=stream-cpu` is the
// CPU-per-stream cases alone, printed; `--only=profile` the --cpu-prof of the 20-chunk stream alone, printed,
// `--no-profile` leaves it out of a full run, `--profile-seconds=N` measures it N s; `--only=soak` the slow streams
// alone, printed, on this checkout or `--build=DIR`'s, with `--node-flags=F,G` added to its start flags and the
// event-loop delay and GC pauses inside it per second). Gateways are pinned to core 0,
// the mock upstream and this load generator to core 1. Results go to docs/performance.md; exit status 1 if
// Tollgate answered anything but 200.
import { execFileSync, execSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Pool } from 'undici';
import {
  CAN_PIN,
  cpuSeconds,
  residentMiB,
  startPinned,
  treeCpuSeconds,
  type Started,
} from './lib/processes.ts';
import { profileTollgate, type ProfileSummary } from './lib/profile.ts';
import { startMock } from './lib/mock.ts';
import { startBareProxy } from './lib/bare.ts';
import { startTollgate } from './lib/tollgate.ts';
import {
  CHAT_BODY,
  closedLoop,
  oneStream,
  openLoop,
  streams,
  summarize,
  type StreamStats,
  type Target,
} from './lib/load.ts';
import { admissionBench, settlementBench, type MicroResult } from './lib/micro.ts';
import { cpuSlices } from './lib/cpu-slices.ts';

const args = new Set(process.argv.slice(2));
const QUICK = args.has('--quick');
const PEER = !args.has('--no-peer');
const STREAMS_ONLY = args.has('--streams-only');
/** `--only=stream-cpu`: the CPU-per-stream cases alone (printed, not written), without the slow streams. */
const STREAM_CPU_ONLY = args.has('--only=stream-cpu');
/** Another checkout (with node_modules) whose Tollgate is measured beside this one in the stream cases: before/after. */
const BASELINE = [...args].find((a) => a.startsWith('--baseline='))?.slice(11);
/** `--cases=WORD`: only the CPU-per-stream cases whose upstream's name contains WORD (any case). */
const CASES = [...args]
  .find((a) => a.startsWith('--cases='))
  ?.slice(8)
  .toLowerCase();
/** How long the slow streams are held (each replaced as it ends): `--soak=SECONDS`, or 30 s. */
const SOAK_SECONDS = Number([...args].find((a) => a.startsWith('--soak='))?.slice(7) ?? 0);
const SLOW_SECONDS = SOAK_SECONDS > 0 ? SOAK_SECONDS : 30;
/** `--only=profile`: the --cpu-prof of the 20-chunk OpenAI-type stream alone, printed; `--no-profile`: none. */
const PROFILE_ONLY = args.has('--only=profile');
/** `--only=soak`: the slow streams alone on `--build=DIR` (this checkout without it), with `--node-flags=F,G`. */
const SOAK_ONLY = args.has('--only=soak');
const SNAPSHOTS = args.has('--snapshots');
const BUILD = [...args].find((a) => a.startsWith('--build='))?.slice(8);
const NODE_FLAGS =
  [...args]
    .find((a) => a.startsWith('--node-flags='))
    ?.slice(13)
    .split(',')
    .filter(Boolean) ?? [];
const PROFILE = !args.has('--no-profile');
const PROFILE_SECONDS = Number(
  [...args].find((a) => a.startsWith('--profile-seconds='))?.slice(18) ?? (QUICK ? 5 : 10),
);
/** The profiled case's connections: those of the headline measurement. */
const PROFILE_CONNECTIONS = 50;
const ROUNDS = QUICK ? 1 : 3;
/** Each round measures CPU in this many closed-loop slices per target, alternating between targets. */
const SLICES = QUICK ? 4 : 8;
const SLICE_MS = 1_500;
const LATENCY_MS = QUICK ? 2_000 : 4_000;
const CONCURRENT_STREAMS = 2_000;
/** Slow streams held open at once (one chunk a second each), for SLOW_SECONDS. */
const SLOW_STREAMS = Number([...args].find((a) => a.startsWith('--slow-streams='))?.slice(15) ?? 10_000);
/** CPU per stream: slices per target and case, and their length. */
const STREAM_SLICES = QUICK ? 2 : 6;
const STREAM_SLICE_MS = QUICK ? 750 : 1_000;
/** The warm-up's streams: whole streams sent at once by the mock, so the warm-up serves many. */
const STREAM_WARM_UP = { ...CHAT_BODY, stream: true, mock_chunks: 20, mock_interval_ms: 0 };
const ROOT = new URL('..', import.meta.url).pathname;
const PG_URL = process.env['TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379';

const log = (line: string): void => void process.stdout.write(`${line}\n`);
const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });

async function startPortkey(mockPort: number): Promise<{ process: Started; target: Target } | undefined> {
  const peer = join(ROOT, 'bench/.peer');
  const entry = join(peer, 'node_modules/@portkey-ai/gateway/build/start-server.js');
  if (!existsSync(entry)) {
    log('installing the peer (Portkey 1.15.2, @hono/node-server 1.13.5) into bench/.peer …');
    mkdirSync(peer, { recursive: true });
    writeFileSync(
      join(peer, 'package.json'),
      JSON.stringify({ private: true, overrides: { '@hono/node-server': '1.13.5' } }),
    );
    try {
      execSync(
        'npm install --no-audit --no-fund --omit=dev @portkey-ai/gateway@1.15.2 @hono/node-server@1.13.5',
        { cwd: peer, stdio: 'ignore' },
      );
    } catch (error) {
      log(`peer install failed, Portkey is left out: ${(error as Error).message}`);
      return undefined;
    }
  }
  const port = await freePort();
  const started = await startPinned(
    0,
    process.execPath,
    [entry, `--port=${port}`, '--headless'],
    {},
    /./,
    30_000,
  );
  for (let i = 0; i < 100; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}/`);
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return {
    process: started,
    target: {
      name: 'Portkey 1.15.2',
      origin: `http://127.0.0.1:${port}`,
      path: '/v1/chat/completions',
      headers: {
        authorization: 'Bearer sk-bench',
        'x-portkey-provider': 'openai',
        'x-portkey-custom-host': `http://127.0.0.1:${mockPort}/v1`,
      },
      pid: started.pid,
    },
  };
}

interface Row {
  target: string;
  rps: number[];
  cpuMicros: number[];
  latency: Record<number, { p50: number[]; p99: number[] }>;
  ttft: number[];
  /** Time to the first chunk of a stream opened alone (no queueing behind other streams). */
  ttftAlone: number[];
  gapP50: number[];
  gapP99: number[];
  events: number[];
  maxEventsPerRead: number;
  non200: number;
}

const median = (values: number[]): number => {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.floor(sorted.length / 2)]!;
};
const spread = (values: number[], digits = 1): string => {
  const finite = values.filter(Number.isFinite);
  return finite.length < 2
    ? ''
    : ` (${Math.min(...finite).toFixed(digits)}–${Math.max(...finite).toFixed(digits)})`;
};

async function main(): Promise<void> {
  if (CAN_PIN) execFileSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });
  log(
    `pinning: ${CAN_PIN ? 'gateways on core 0, mock and load generator on core 1' : 'taskset unavailable, unpinned'}`,
  );
  if (SOAK_ONLY) return soakOnly();
  const { process: mock, port: mockPort } = await startMock();
  const { process: bare, target: bareTarget } = await startBareProxy(mockPort);
  const tollgate = await startTollgate(mockPort);
  const baseline = BASELINE ? await startTollgate(mockPort, [], BASELINE) : undefined;
  const portkey = PEER ? await startPortkey(mockPort) : undefined;
  const direct: Target = {
    name: 'mock (direct)',
    origin: `http://127.0.0.1:${mockPort}`,
    path: '/v1/chat/completions',
    headers: {},
  };
  const targets: Target[] = [direct, bareTarget, tollgate.target, ...(portkey ? [portkey.target] : [])];
  const ratios = { bare: [] as number[], peer: [] as number[] };
  const rows = new Map<string, Row>(
    targets.map((t) => [
      t.name,
      {
        target: t.name,
        rps: [],
        cpuMicros: [],
        latency: { 1: { p50: [], p99: [] }, 16: { p50: [], p99: [] }, 64: { p50: [], p99: [] } },
        ttft: [],
        ttftAlone: [],
        gapP50: [],
        gapP99: [],
        events: [],
        maxEventsPerRead: 0,
        non200: 0,
      },
    ]),
  );

  try {
    if (STREAM_CPU_ONLY) {
      log(streamSections(await streamCpu(bareTarget, tollgate.target, baseline?.target)).join('\n'));
      return;
    }
    if (PROFILE_ONLY) {
      log(profileSection(await streamProfile(mockPort)).join('\n'));
      return;
    }
    if (STREAMS_ONLY) {
      const cases = await streamCpu(bareTarget, tollgate.target, baseline?.target);
      const slow =
        SLOW_STREAMS > 0 ? await slowStreams(tollgate.target, SLOW_STREAMS, SLOW_SECONDS) : undefined;
      log(streamSections(cases, slow).join('\n'));
      return;
    }
    log('warming up …');
    for (const target of targets) {
      const warm = await closedLoop(target, 8, QUICK ? 1_000 : 3_000);
      // Streams too: the time to first token of a stream alone is measured on warm code, not on the first
      // streams a process ever serves (each of the first few added 0.3–4 ms while its code was compiled).
      const warmStreams = await closedLoop(target, 1, QUICK ? 1_000 : 2_000, STREAM_WARM_UP);
      rows.get(target.name)!.non200 += warm.non200 + warmStreams.non200;
    }
    for (let round = 1; round <= ROUNDS; round++) {
      log(`round ${round}/${ROUNDS}`);
      const sliced = await cpuSlices(targets, SLICES, SLICE_MS);
      for (const target of targets) {
        const row = rows.get(target.name)!;
        const run = sliced.get(target.name)!;
        row.rps.push(run.requests / run.seconds);
        row.cpuMicros.push((run.cpuSeconds * 1e6) / run.requests);
        row.non200 += run.non200;
      }
      const cpuOf = (name: string): number => rows.get(name)?.cpuMicros.at(-1) ?? NaN;
      ratios.bare.push(cpuOf('Tollgate') / cpuOf('bare node:http proxy'));
      ratios.peer.push(cpuOf('Tollgate') / cpuOf('Portkey 1.15.2'));
      for (const target of targets) {
        const row = rows.get(target.name)!;
        for (const connections of [1, 16, 64] as const) {
          const rate = connections === 1 ? 200 : 500;
          const result = await openLoop(target, connections, rate, LATENCY_MS);
          const stats = summarize(result.latencies);
          row.latency[connections]!.p50.push(stats.p50);
          row.latency[connections]!.p99.push(stats.p99);
          row.non200 += result.non200;
        }
        // Short streams (4 content chunks, the first 20 ms after the role chunk) so that many fit: a median of
        // four long streams could not resolve half a millisecond on a shared machine.
        const alone = await streams(target, QUICK ? 24 : 48, 1, { mock_chunks: 4 });
        row.ttftAlone.push(summarize(alone.ttft).p50);
        row.non200 += alone.non200;
        const streamed: StreamStats = await streams(target, QUICK ? 16 : 40, 8);
        row.ttft.push(summarize(streamed.ttft).p50);
        const gaps = summarize(streamed.gaps);
        row.gapP50.push(gaps.p50);
        row.gapP99.push(gaps.p99);
        row.events.push(...streamed.events);
        row.maxEventsPerRead = Math.max(row.maxEventsPerRead, streamed.maxEventsPerRead);
        row.non200 += streamed.non200;
        log(
          `  ${target.name}: ${Math.round(row.rps.at(-1)!)} req/s, ${row.cpuMicros.at(-1)!.toFixed(0)} µs CPU/req`,
        );
      }
    }

    const cases = await streamCpu(bareTarget, tollgate.target, baseline?.target);
    log(`${CONCURRENT_STREAMS} concurrent streams through Tollgate …`);
    const held = await concurrentStreams(tollgate.target, CONCURRENT_STREAMS);
    rows.get('Tollgate')!.non200 += held.non200;
    const profile = PROFILE ? await streamProfile(mockPort) : undefined;
    const slow =
      SLOW_STREAMS > 0 ? await slowStreams(tollgate.target, SLOW_STREAMS, SLOW_SECONDS) : undefined;

    log('micro benchmarks …');
    const micro = [...(await settlementBench(PG_URL)), ...(await admissionBench(REDIS_URL))];
    writeReport([...rows.values()], ratios, held, micro, streamSections(cases, slow, profile));
    const failures = rows.get('Tollgate')!.non200;
    log(`Tollgate non-200 answers: ${failures}`);
    if (failures > 0) process.exitCode = 1;
  } finally {
    await Promise.all([
      mock.stop(),
      bare.stop(),
      tollgate.process.stop(),
      portkey?.process.stop(),
      baseline?.process.stop(),
    ]);
    rmSync(tollgate.dir, { recursive: true, force: true });
    if (baseline) rmSync(baseline.dir, { recursive: true, force: true });
  }
}

/** One stream comparison: the same events through Tollgate and through the bare proxy. */
interface StreamCase {
  upstream: string;
  chunks: number;
  concurrency: number;
  tollgate: { path: string; body: object };
  bare: { path: string; body: object };
  tollgateMicros: number[];
  bareMicros: number[];
  ratios: number[];
  /** The baseline checkout's Tollgate, when one is measured (--baseline). */
  beforeMicros: number[];
  beforeRatios: number[];
  non200: number;
}

const streamBody = (model: string, extra: object = {}): object => ({
  ...CHAT_BODY,
  model,
  stream: true,
  ...extra,
});

/** The stream comparisons: OpenAI-type and simulator upstreams (same protocol), Anthropic-type (translated). */
function streamCases(): StreamCase[] {
  const cases: StreamCase[] = [];
  for (const chunks of [20, 200])
    for (const concurrency of [1, 50]) {
      const fast = { mock_chunks: chunks, mock_interval_ms: 0 };
      const bareOpenAI = { path: '/v1/chat/completions', body: streamBody('mock-model', fast) };
      const base = { chunks, concurrency, non200: 0 };
      const fresh = () => ({
        tollgateMicros: [],
        bareMicros: [],
        ratios: [],
        beforeMicros: [],
        beforeRatios: [],
      });
      cases.push(
        {
          ...base,
          ...fresh(),
          upstream: 'OpenAI-type',
          tollgate: { path: '/v1/chat/completions', body: streamBody('model-b', fast) },
          bare: bareOpenAI,
        },
        {
          ...base,
          ...fresh(),
          upstream: 'Anthropic-type (translated)',
          tollgate: { path: '/v1/chat/completions', body: streamBody(`model-a${chunks}`) },
          bare: { path: '/v1/messages', body: streamBody(`mock-c${chunks}-i0`) },
        },
      );
      // The simulator's answers are 12 to 35 words (one chunk each): it has the 20-chunk cases only.
      if (chunks === 20)
        cases.push({
          ...base,
          ...fresh(),
          upstream: 'simulator',
          tollgate: { path: '/v1/chat/completions', body: streamBody('model-s', { max_tokens: chunks }) },
          bare: bareOpenAI,
        });
    }
  return cases;
}

/**
 * The simulator's chunks for the cases' request, counted through Tollgate, and the mock set to send as many
 * events to the bare proxy (its role chunk, the content chunks, the finish chunk).
 */
async function matchSimulator(tollgate: Target, c: StreamCase): Promise<void> {
  const stats: StreamStats = { ttft: [], gaps: [], events: [], maxEventsPerRead: 0, non200: 0, completed: 0 };
  const pool = new Pool(tollgate.origin, { connections: 1 });
  await oneStream(pool, tollgate, JSON.stringify(c.tollgate.body), stats, '"content":"');
  await pool.close();
  const words = stats.events[0] ?? c.chunks;
  c.chunks = words;
  c.bare = { ...c.bare, body: { ...c.bare.body, mock_chunks: words - 1 } };
}

/**
 * CPU per stream, Tollgate against the bare proxy relaying the same events: closed loops of whole streams in
 * alternating slices (the order reversed every other slice), as the non-streamed measurement does.
 */
async function streamCpu(bare: Target, tollgate: Target, before?: Target): Promise<StreamCase[]> {
  const cases = streamCases().filter((c) => CASES === undefined || c.upstream.toLowerCase().includes(CASES));
  for (const c of cases) if (c.upstream === 'simulator') await matchSimulator(tollgate, c);
  for (let round = 1; round <= ROUNDS; round++) {
    log(`streams: CPU per stream, round ${round}/${ROUNDS} …`);
    for (const c of cases) {
      const sides = [
        { target: { ...tollgate, path: c.tollgate.path }, body: c.tollgate.body, cpu: 0, streams: 0 },
        { target: { ...bare, path: c.bare.path }, body: c.bare.body, cpu: 0, streams: 0 },
        ...(before
          ? [{ target: { ...before, path: c.tollgate.path }, body: c.tollgate.body, cpu: 0, streams: 0 }]
          : []),
      ];
      for (const side of sides) await closedLoop(side.target, c.concurrency, 300, side.body);
      for (let slice = 0; slice < STREAM_SLICES; slice++) {
        for (const side of slice % 2 === 0 ? sides : [...sides].reverse()) {
          const before = treeCpuSeconds(side.target.pid!);
          const run = await closedLoop(side.target, c.concurrency, STREAM_SLICE_MS, side.body);
          side.cpu += treeCpuSeconds(side.target.pid!) - before;
          side.streams += run.requests - run.non200;
          if (side === sides[0]) c.non200 += run.non200;
        }
      }
      const [mine, theirs, earlier] = sides.map((side) => (side.cpu * 1e6) / side.streams) as [
        number,
        number,
        number | undefined,
      ];
      c.tollgateMicros.push(mine);
      c.bareMicros.push(theirs);
      c.ratios.push(mine / theirs);
      if (earlier !== undefined) {
        c.beforeMicros.push(earlier);
        c.beforeRatios.push(earlier / theirs);
      }
      log(
        `  ${c.upstream}, ${c.chunks} chunks, ${c.concurrency} at once: Tollgate ${mine.toFixed(0)} µs, bare ${theirs.toFixed(0)} µs (${(mine / theirs).toFixed(2)}×)${earlier === undefined ? '' : `; before ${earlier.toFixed(0)} µs (${(earlier / theirs).toFixed(2)}×)`}`,
      );
    }
  }
  return cases;
}

/** A memory sample of the slow streams: seconds since they began, Tollgate's resident MiB, streams in flight. */
interface Sample {
  at: number;
  mib: number;
  open: number;
}

interface Slow {
  streams: number;
  /** How long they were held (new ones opened until then), and all of it with the last ones' ends. */
  seconds: number;
  elapsed: number;
  /** Date.now() when the first stream was opened. */
  startedAtMs: number;
  sampleSeconds: number;
  /** Streams answered 200, read to their end, answered otherwise, and failed (a socket error or a timeout). */
  opened: number;
  completed: number;
  non200: number;
  errors: number;
  idleMiB: number;
  samples: Sample[];
  /** Samples from here on are the plateau: the per-stream figure and the flatness rule read them. */
  plateauFrom: number;
  heldMiB: number;
  peakMiB: number;
  /** Five seconds after the last stream ended. */
  afterMiB: number;
  perStreamKiB: number;
  /** The least-squares line through the plateau's samples: its rise over the plateau, and what is let pass. */
  growthMiB: number;
  toleranceMiB: number;
  gaps: number;
  maxGapMs: number;
  stalls: number;
  /** Shares of a core while held: Tollgate's (core 0) and this load generator's own (core 1). */
  gatewayCpu: number;
  loadCpu: number;
  /** This process's event-loop delay while held: a busy load generator would read late chunks as gaps. */
  loopP99Ms: number;
  loopMaxMs: number;
}

/** Prompts of the slow streams: the simulator answers each with its own 12 to 35 words, one chunk a second. */
const SLOW_PROMPTS = Array.from({ length: 64 }, (_, i) =>
  JSON.stringify({
    model: 'model-slow',
    stream: true,
    messages: [{ role: 'user', content: `Keep this stream open, please (${i}).` }],
  }),
);
/**
 * Rule for "flat": the plateau's fitted rise is within this share of what the open streams hold above idle, or
 * within FLAT_FLOOR_MIB when that is less (the heap's own swing, a few MiB, with few streams).
 */
const FLAT_TOLERANCE = 0.05;
const FLAT_FLOOR_MIB = 5;

/** Least-squares rise of `samples`' MiB from their first to their last time. */
function fittedRise(samples: Sample[]): number {
  const n = samples.length;
  if (n < 2) return NaN;
  const meanAt = samples.reduce((sum, s) => sum + s.at, 0) / n;
  const meanMiB = samples.reduce((sum, s) => sum + s.mib, 0) / n;
  let covariance = 0;
  let variance = 0;
  for (const s of samples) {
    covariance += (s.at - meanAt) * (s.mib - meanMiB);
    variance += (s.at - meanAt) ** 2;
  }
  return (covariance / variance) * (samples[n - 1]!.at - samples[0]!.at);
}

/** What the slow streams have done so far, counted as it happens: a long soak keeps no per-chunk record. */
interface SlowTally {
  answered: number;
  completed: number;
  non200: number;
  errors: number;
  inFlight: number;
  gaps: number;
  maxGapMs: number;
  stalls: number;
}

const CONTENT = Buffer.from('"content":"');

/**
 * One slow stream, read through undici's dispatch callbacks rather than a body stream and a promise per chunk,
 * so that 10,000 streams at a chunk a second cost this load generator little: a gap is the time between two
 * reads that hold a content chunk, and a stall one over 2 s. Resolves with whether it was answered 200 and ended.
 */
function slowStream(pool: Pool, target: Target, body: string, tally: SlowTally): Promise<boolean> {
  tally.inFlight += 1;
  return new Promise((resolve) => {
    let ok = false;
    let last = 0;
    const done = (completed: boolean): void => {
      tally.inFlight -= 1;
      resolve(completed);
    };
    pool.dispatch(
      {
        origin: target.origin,
        path: target.path,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...target.headers },
        body,
      },
      {
        // The handler undici's core calls itself (no wrapper): the callbacks its own request() is built on.
        onConnect() {},
        onHeaders(statusCode) {
          ok = statusCode === 200;
          if (ok) tally.answered += 1;
          else tally.non200 += 1;
          return true;
        },
        onData(chunk) {
          if (!ok || !chunk.includes(CONTENT)) return true;
          const now = performance.now();
          if (last !== 0) {
            const gap = now - last;
            tally.gaps += 1;
            tally.maxGapMs = Math.max(tally.maxGapMs, gap);
            if (gap > 2_000) tally.stalls += 1;
          }
          last = now;
          return true;
        },
        onComplete() {
          if (ok) tally.completed += 1;
          done(ok);
        },
        onError() {
          tally.errors += 1;
          done(false);
        },
      },
    );
  });
}

/**
 * `count` slow streams held open on Tollgate for `seconds` (the simulator at one chunk a second, 12 to 35 chunks
 * each; as one ends its slot opens another, so `count` are open throughout), opened 500 every 250 ms at the start.
 * Resident memory is read every second (for the peak) and recorded every `seconds / 10` (at most 10 s); the
 * plateau runs from the end of the first minute (a quarter of a shorter hold, and never before the ramp's end plus
 * two paces) to the hold's end. Per open stream: the plateau's median resident memory above the idle process's,
 * divided by the streams in flight. Flat: the least-squares line through the plateau's samples rises by at most
 * FLAT_TOLERANCE of what the streams hold above idle (FLAT_FLOOR_MIB at least). The simulator needs no upstream
 * sockets, so 10,000 streams take 10,000 descriptors in each of Tollgate and this process (the processes' limit
 * is the hard one: see package.json's bench script); the pool's connections stay open, each reused by its slot's
 * next stream. This process's own CPU and event-loop delay are reported, to show it was not the bottleneck.
 */
async function slowStreams(target: Target, count: number, seconds: number): Promise<Slow> {
  log(`${count} concurrent slow streams (one chunk a second) through Tollgate, held ${seconds} s …`);
  const pid = target.pid!;
  const files = Number(
    /Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? Infinity,
  );
  if (files < count + 1_000)
    log(
      `  warning: ${files} open files allowed, and ${count} streams take as many sockets here and in Tollgate: run through \`npm run bench\`, which raises the limit to the hard one`,
    );
  // Idle: the least resident memory over 10 s without load, which lets V8 shrink the heap that the sections
  // before left (its memory reducer collects a few seconds after allocation stops).
  let idleMiB = residentMiB(pid);
  for (let second = 0; second < 10; second++) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    idleMiB = Math.min(idleMiB, residentMiB(pid));
  }
  const pool = new Pool(target.origin, {
    connections: count,
    pipelining: 1,
    headersTimeout: 120_000,
    bodyTimeout: 30_000,
  });
  const tally: SlowTally = {
    answered: 0,
    completed: 0,
    non200: 0,
    errors: 0,
    inFlight: 0,
    gaps: 0,
    maxGapMs: 0,
    stalls: 0,
  };
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const started = performance.now();
  const startedAtMs = Date.now();
  const stopAt = started + seconds * 1_000;
  const cpuBefore = { gateway: treeCpuSeconds(pid), load: cpuSeconds(process.pid) };
  const sampleSeconds = Math.min(10, Math.max(1, Math.round(seconds / 10)));
  const samples: Sample[] = [{ at: 0, mib: idleMiB, open: 0 }];
  let peakMiB = idleMiB;
  const sample = (): void => {
    const mib = residentMiB(pid);
    peakMiB = Math.max(peakMiB, mib);
    const at = Math.round((performance.now() - started) / 1_000);
    if (at >= samples.at(-1)!.at + sampleSeconds) samples.push({ at, mib, open: tally.inFlight });
  };
  const sampler = setInterval(sample, 1_000);
  const slot = async (first: number): Promise<void> => {
    for (let next = first; performance.now() < stopAt; next += 1)
      // After a failure the slot waits a pace before its next stream rather than retrying at once.
      if (!(await slowStream(pool, target, SLOW_PROMPTS[next % SLOW_PROMPTS.length]!, tally)))
        await new Promise((resolve) => setTimeout(resolve, 1_000));
  };
  const slots: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    if (i > 0 && i % 500 === 0) await new Promise((resolve) => setTimeout(resolve, 250));
    slots.push(slot(i));
  }
  const rampSeconds = (performance.now() - started) / 1_000;
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, stopAt - performance.now())));
  clearInterval(sampler);
  sample();
  const held = (performance.now() - started) / 1_000;
  const gatewayCpu = (treeCpuSeconds(pid) - cpuBefore.gateway) / held;
  const loadCpu = (cpuSeconds(process.pid) - cpuBefore.load) / held;
  loop.disable();
  await Promise.all(slots);
  const elapsed = (performance.now() - started) / 1_000;
  await pool.close();
  await new Promise((resolve) => setTimeout(resolve, 5_000));
  const afterMiB = residentMiB(pid);

  const plateauFrom = Math.max(Math.min(60, seconds / 4), rampSeconds + 2);
  const plateau = samples.filter((s) => s.at >= plateauFrom);
  const heldMiB = median(plateau.map((s) => s.mib));
  const meanOpen = plateau.reduce((sum, s) => sum + s.open, 0) / plateau.length;
  return {
    streams: count,
    seconds,
    elapsed,
    startedAtMs,
    sampleSeconds,
    opened: tally.answered,
    completed: tally.completed,
    non200: tally.non200,
    errors: tally.errors,
    idleMiB,
    samples,
    plateauFrom,
    heldMiB,
    peakMiB,
    afterMiB,
    perStreamKiB: ((heldMiB - idleMiB) * 1024) / meanOpen,
    growthMiB: plateau.length >= 3 ? fittedRise(plateau) : NaN,
    toleranceMiB: Math.max(FLAT_TOLERANCE * (heldMiB - idleMiB), FLAT_FLOOR_MIB),
    gaps: tally.gaps,
    maxGapMs: tally.maxGapMs,
    stalls: tally.stalls,
    gatewayCpu,
    loadCpu,
    loopP99Ms: loop.percentile(99) / 1e6,
    loopMaxMs: loop.max / 1e6,
  };
}

/**
 * `--only=soak`: the slow streams alone on a Tollgate of its own (this checkout or `--build=DIR`, with
 * `--node-flags`), which has served nothing before (the simulator needs no mock). A preload (bench/lib/loop-hook.ts)
 * records Tollgate's event-loop delay, heap and GC pauses each second; printed with the slow-stream section.
 */
async function soakOnly(): Promise<void> {
  const hookLog = join(mkdtempSync(join(tmpdir(), 'tollgate-loop-')), 'loop.tsv');
  process.env['LOOP_HOOK_LOG'] = hookLog;
  const hook = join(ROOT, 'bench/lib/loop-hook.ts');
  // The unused mock port: every slow stream goes to the in-process simulator.
  const tollgate = await startTollgate(
    9,
    ['--import', hook, ...(SNAPSHOTS ? ['--heapsnapshot-signal=SIGUSR2'] : []), ...NODE_FLAGS],
    BUILD ?? ROOT,
    [],
    // Slow to start on a busy machine, and slower with a profiler.
    120_000,
  );
  try {
    log(`Tollgate of ${BUILD ?? ROOT}, node flags: ${NODE_FLAGS.join(' ') || "(the start script's)"}`);
    // `--snapshots`: heap snapshots (node's --heapsnapshot-signal, written to the checkout's directory) at idle and
    // halfway through the hold, to compare what each open stream keeps alive.
    let snapshot: NodeJS.Timeout | undefined;
    if (SNAPSHOTS) {
      // The idle one written whole (its size steady for 2 s) before any stream opens.
      const taken = (): string[] => readdirSync('.').filter((f) => f.endsWith('.heapsnapshot'));
      const earlier = taken().length;
      process.kill(tollgate.target.pid!, 'SIGUSR2');
      let size = -1;
      for (;;) {
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        const file = taken().sort().at(-1);
        if (taken().length === earlier || file === undefined) continue;
        const now = statSync(file).size;
        if (now === size && now > 0) break;
        size = now;
      }
      snapshot = setTimeout(
        () => process.kill(tollgate.target.pid!, 'SIGUSR2'),
        (10 + SLOW_SECONDS / 2) * 1_000,
      );
    }
    const slow = await slowStreams(tollgate.target, SLOW_STREAMS, SLOW_SECONDS);
    clearTimeout(snapshot);
    log(slowSection(slow).join('\n'));
    const from = slow.startedAtMs / 1_000 + slow.plateauFrom;
    log(loopSummary(readFileSync(hookLog, 'utf8'), from, slow.startedAtMs / 1_000 + slow.seconds));
    writeFileSync(join(hookLog, '../tollgate.out'), tollgate.process.output());
    log(
      `per-second log: ${hookLog}; Tollgate's output (e.g. --trace-gc-nvp): ${join(hookLog, '../tollgate.out')}`,
    );
  } finally {
    await tollgate.process.stop();
    rmSync(tollgate.dir, { recursive: true, force: true });
  }
}

/** The hook's per-second lines from `from` to `to` (Unix s): the loop's delay, the heap and GC pauses, summed up. */
function loopSummary(tsv: string, from: number, to: number): string {
  const origin = Number(/origin_ms=(\d+)/.exec(tsv)?.[1]);
  const rows = tsv
    .trim()
    .split('\n')
    .filter((line) => /^\d/.test(line))
    .map((line) => line.split('\t').map(Number))
    .filter((r) => r[0]! >= from && r[0]! <= to);
  if (rows.length === 0) return '- Tollgate event loop: no samples';
  const col = (i: number): number[] => rows.map((r) => r[i]!);
  const sum = (v: number[]): number => v.reduce((a, b) => a + b, 0);
  const sortedMax = col(2).sort((a, b) => a - b);
  const heap = col(3);
  return [
    `- Tollgate's event loop on the plateau (${rows.length} s): per-second max delay p50 ${median(col(2))} ms, p99 ${sortedMax[Math.floor(0.99 * (sortedMax.length - 1))]} ms, max ${sortedMax.at(-1)} ms; seconds with a delay over 500 ms: ${sortedMax.filter((v) => v > 500).length}, over 1 s: ${sortedMax.filter((v) => v > 1_000).length}; per-second p99 delay median ${median(col(1))} ms`,
    `- The plateau in the process's own ms (those of --trace-gc): ${(from * 1_000 - origin).toFixed(0)} to ${(to * 1_000 - origin).toFixed(0)}`,
    ...(rows[0]!.length > 10
      ? [
          `- Tollgate's longest turn in main-thread CPU (between two ticks of a 10-ms timer): per-second max p50 ${median(col(10))} ms, max ${Math.max(...col(10))} ms; seconds with one over 500 ms: ${col(10).filter((v) => v > 500).length}, over 1 s: ${col(10).filter((v) => v > 1_000).length}; the process's CPU (GC threads too) between two ticks: p50 ${median(col(12))} ms, max ${Math.max(...col(12))} ms, seconds over 500 ms: ${col(12).filter((v) => v > 500).length}, over 1 s: ${col(12).filter((v) => v > 1_000).length}`,
        ]
      : []),
    `- Heap in use ${Math.min(...heap)}–${Math.max(...heap)} MB; GC pauses: minor ${sum(col(4))} (${sum(col(5))} ms), major ${sum(col(6))} (${sum(col(7))} ms), other ${sum(col(8))} (${sum(col(9))} ms): ${((sum(col(5)) + sum(col(7)) + sum(col(9))) / rows.length / 10).toFixed(1)}% of the time in pauses`,
  ].join('\n');
}

/** The stream sections of docs/performance.md. */
function streamSections(cases: StreamCase[], slow?: Slow, profile?: ProfileSummary): string[] {
  const target = (c: StreamCase): number => (c.upstream.startsWith('Anthropic') ? 2 : 1.3);
  const withBefore = cases.some((c) => c.beforeMicros.length > 0);
  const before = (c: StreamCase): string =>
    withBefore ? ` ${median(c.beforeMicros).toFixed(0)} | ${median(c.beforeRatios).toFixed(2)}× |` : '';
  return [
    '## CPU per stream against the bare proxy (issue 19)',
    '',
    `Each case: whole streams back to back on 1 or 50 connections, the mock sending every chunk at once, in ${STREAM_SLICES} slices of ${STREAM_SLICE_MS / 1000} s per side and round, Tollgate and the bare proxy taking turns (order reversed every other slice). The bare proxy relays the same upstream events (OpenAI chunks; for the Anthropic-type case the mock's Messages events, which Tollgate translates; for the simulator the OpenAI mock's chunks, the same count). CPU: the gateway process's user+system time per completed stream; the ratio is the median of the rounds' own ratios.`,
    '',
    ...(withBefore
      ? [
          '"before": the Tollgate of the baseline checkout (`--baseline=DIR`), measured in the same slices.',
          '',
        ]
      : []),
    `| upstream | chunks | streams at once | Tollgate µs/stream | bare proxy µs/stream | ratio | target | met |${withBefore ? ' before µs/stream | before ratio |' : ''}`,
    `|---|---:|---:|---:|---:|---:|---:|---|${withBefore ? '---:|---:|' : ''}`,
    ...cases.map(
      (c) =>
        `| ${c.upstream} | ${c.chunks} | ${c.concurrency} | ${median(c.tollgateMicros).toFixed(0)} | ${median(c.bareMicros).toFixed(0)} | ${median(c.ratios).toFixed(2)}×${spread(c.ratios, 2)} | ≤ ${target(c)}× | ${median(c.ratios) <= target(c) ? 'yes' : 'no'}${c.non200 > 0 ? ` (${c.non200} non-200)` : ''} |${before(c)}`,
    ),
    '',
    ...(profile === undefined ? [] : profileSection(profile)),
    ...(slow === undefined ? [] : slowSection(slow)),
  ];
}

/** The 20-chunk OpenAI-type stream case (the mock sending every chunk at once) under `--cpu-prof`. */
async function streamProfile(mockPort: number): Promise<ProfileSummary> {
  log(`profile: 20-chunk streams on ${PROFILE_CONNECTIONS} connections, ${PROFILE_SECONDS} s …`);
  return profileTollgate({
    mockPort,
    body: streamBody('model-b', { mock_chunks: 20, mock_interval_ms: 0 }),
    connections: PROFILE_CONNECTIONS,
    seconds: PROFILE_SECONDS,
    outDir: join(ROOT, 'bench/profiles/stream-20'),
  });
}

/** Where the stream's CPU goes: the profile's largest groups, each with its largest functions. */
function profileSection(profile: ProfileSummary): string[] {
  const rows = 15;
  const cell = (text: string): string => text.replaceAll('|', '\\|');
  const rest = profile.groups.slice(rows);
  const restShare = rest.reduce((sum, g) => sum + g.share, 0);
  return [
    "## Where a 20-chunk stream's CPU goes (issue 19)",
    '',
    `\`--cpu-prof\` of a Tollgate of its own (core 0) serving the OpenAI-type case above: 20 chunks sent at once by the mock, ${PROFILE_CONNECTIONS} connections in a closed loop, ${PROFILE_SECONDS} s measured after 3 s of warm-up; ${profile.requests} streams, **${profile.perRequest.toFixed(0)} µs of CPU each with the profiler on** (the table above is without it). Self time of the measured seconds' samples (start-up and the stop left out) by package, source file or native bucket, with each one's largest functions; shares are of the busy samples, µs are that share of the CPU per stream. The profile stays in \`bench/profiles/stream-20/\` for a flame graph (Chrome DevTools or speedscope); \`npm run bench:profile -- --stream\` takes one with other settings.`,
    '',
    '| share | µs/stream | what (largest functions) |',
    '|---:|---:|---|',
    ...profile.groups.slice(0, rows).map(
      (g) =>
        `| ${(g.share * 100).toFixed(1)}% | ${g.micros.toFixed(1)} | \`${cell(g.name)}\`${
          g.functions[0]?.name === g.name
            ? ''
            : `: ${g.functions
                .slice(0, 3)
                .map((f) => `${cell(f.name)} ${(f.share * 100).toFixed(1)}%`)
                .join(', ')}`
        } |`,
    ),
    ...(rest.length > 0
      ? [
          `| ${(restShare * 100).toFixed(1)}% | ${(restShare * profile.perRequest).toFixed(1)} | ${rest.length} others, none above ${((rest[0]?.share ?? 0) * 100).toFixed(1)}% |`,
        ]
      : []),
    '',
  ];
}

function slowSection(slow: Slow): string[] {
  const n = (value: number): string => Math.round(value).toLocaleString('en');
  const kibTarget = 64_000 / 1024;
  const flat = Number.isFinite(slow.growthMiB) ? slow.growthMiB <= slow.toleranceMiB : undefined;
  const plateau = slow.samples.filter((s) => s.at >= slow.plateauFrom);
  const busyLoad = slow.loadCpu > 0.8 || slow.loopMaxMs > 1_000;
  return [
    `## ${n(slow.streams)} concurrent slow streams on one Tollgate instance (issue 19)`,
    '',
    `- Each stream: the simulator at one chunk a second, 12 to 35 chunks (${SLOW_PROMPTS.length} prompts in turn); each of the ${n(slow.streams)} is replaced by a new one as it ends, for ${slow.seconds} s${SOAK_SECONDS > 0 ? ` (\`--soak=${SOAK_SECONDS}\`)` : ' (`--soak=600` for the 10-minute soak)'}, opened 500 every 250 ms at the start; ${slow.elapsed.toFixed(0)} s with the last ones' ends`,
    `- Streams: ${n(slow.opened)} answered, ${n(slow.completed)} read to their end; non-200: ${slow.non200}; errors: ${slow.errors}`,
    `- Resident memory: ${slow.idleMiB.toFixed(0)} MiB idle (the least over 10 s without load before), ${slow.heldMiB.toFixed(0)} MiB held (median of the samples from ${slow.plateauFrom.toFixed(0)} s on), ${slow.peakMiB.toFixed(0)} MiB at the peak, ${slow.afterMiB.toFixed(0)} MiB 5 s after the last stream ended: **${slow.perStreamKiB.toFixed(1)} KiB per open stream** above idle (target ≤ 64 KB = ${kibTarget.toFixed(1)} KiB): ${slow.perStreamKiB <= kibTarget ? 'met' : 'not met'}`,
    `- Flat: the least-squares line through the samples from ${slow.plateauFrom.toFixed(0)} s to ${slow.seconds} s rises ${flat === undefined ? '(too few samples)' : `${slow.growthMiB.toFixed(1)} MiB`}; allowed: ${(FLAT_TOLERANCE * 100).toFixed(0)}% of what the streams hold above idle, at least ${FLAT_FLOOR_MIB} MiB: ${slow.toleranceMiB.toFixed(1)} MiB: ${flat === undefined ? 'not judged' : flat ? 'flat' : 'not flat'}`,
    `- Resident MiB every ${slow.sampleSeconds} s (streams in flight at the plateau's samples: ${Math.min(...plateau.map((s) => s.open))}–${Math.max(...plateau.map((s) => s.open))}): ${slow.samples.map((s) => s.mib.toFixed(0)).join(', ')}`,
    `- Gaps between chunks: ${n(slow.gaps)}, the longest ${slow.maxGapMs.toFixed(0)} ms (pace 1,000 ms); over 2 s (stalls): ${slow.stalls}: ${slow.stalls === 0 && slow.errors === 0 && slow.non200 === 0 ? 'no stall' : 'stalled or failed'}`,
    `- CPU while held: Tollgate ${(slow.gatewayCpu * 100).toFixed(0)}% of core 0; this load generator ${(slow.loadCpu * 100).toFixed(0)}% of core 1, its event-loop delay p99 ${slow.loopP99Ms.toFixed(0)} ms, max ${slow.loopMaxMs.toFixed(0)} ms: ${busyLoad ? 'the load generator may have been the bottleneck (its delays count as gaps)' : 'not the bottleneck'}`,
    '',
  ];
}

interface Held {
  streams: number;
  completed: number;
  non200: number;
  peakMiB: number;
  baselineMiB: number;
  maxGapMs: number;
  stalls: number;
}

/** Holds `count` streams open at once (64 chunks every 50 ms each) and watches the gateway's memory. */
async function concurrentStreams(target: Target, count: number): Promise<Held> {
  const baselineMiB = residentMiB(target.pid!);
  const pool = new Pool(target.origin, { connections: count, pipelining: 1 });
  const stats: StreamStats = { ttft: [], gaps: [], events: [], maxEventsPerRead: 0, non200: 0, completed: 0 };
  let peakMiB = baselineMiB;
  const sampler = setInterval(() => (peakMiB = Math.max(peakMiB, residentMiB(target.pid!))), 100);
  const body = JSON.stringify({
    model: 'model-b',
    max_tokens: 16,
    stream: true,
    mock_interval_ms: 50,
    messages: [{ role: 'user', content: 'hold me' }],
  });
  await Promise.all(
    Array.from({ length: count }, () =>
      oneStream(pool, target, body, stats).catch(() => void (stats.non200 += 1)),
    ),
  );
  clearInterval(sampler);
  await pool.close();
  const maxGapMs = stats.gaps.reduce((max, gap) => Math.max(max, gap), 0);
  return {
    streams: count,
    completed: stats.completed,
    non200: stats.non200,
    peakMiB,
    baselineMiB,
    maxGapMs,
    stalls: stats.gaps.filter((g) => g > 500).length,
  };
}

function writeReport(
  rows: Row[],
  ratios: { bare: number[]; peer: number[] },
  held: Held,
  micro: MicroResult[],
  streamLines: string[],
): void {
  const byName = new Map(rows.map((r) => [r.target, r]));
  const direct = byName.get('mock (direct)')!;
  const tollgate = byName.get('Tollgate')!;
  const portkey = byName.get('Portkey 1.15.2');
  const commit = (() => {
    try {
      return execSync('git rev-parse --short HEAD', { cwd: ROOT }).toString().trim();
    } catch {
      return 'unknown';
    }
  })();
  const added = (row: Row, c: number, p: 'p50' | 'p99'): string =>
    (median(row.latency[c]![p]) - median(direct.latency[c]![p])).toFixed(3);
  const lines: string[] = [
    '# Performance',
    '',
    'Written by `npm run bench` (bench/run.ts); the analysis at the end is kept between runs.',
    '',
    `- Date: ${new Date().toISOString()}`,
    `- Commit: ${commit}`,
    `- Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
    `- Pinning: ${CAN_PIN ? 'each gateway on core 0; mock upstream and load generator on core 1' : 'none (taskset unavailable)'}`,
    `- Rounds: ${ROUNDS}, interleaved (every target once per round); medians across rounds, (min–max) where shown`,
    '- Request: `model-b`, one short user message, `max_tokens: 16`; Tollgate runs its full path on the embedded store: key lookup, admission, credit hold, relay, metering, settlement and usage record',
    '',
    '## Non-streamed requests',
    '',
    `Throughput and CPU: 16 connections, closed loop, in ${SLICES} slices of ${SLICE_MS / 1000} s per target and round, the targets taking turns (the order reversed every other slice), so that a change in the shared machine's speed falls on every target alike. CPU: the gateway process's user+system time from /proc, divided by requests served. Latency: open loop at a fixed rate (200 req/s on 1 connection, 500 req/s on 16 and 64), measured from the scheduled send; "added" is the target's percentile minus the direct mock's in the same rounds.`,
    '',
    '| target | req/s | CPU µs/req | added p50 @1 (ms) | added p50 @16 | added p99 @16 | added p50 @64 | added p99 @64 |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((row) =>
      row === direct
        ? `| ${row.target} | ${median(row.rps).toFixed(0)} | – | (p50 ${median(row.latency[1]!.p50).toFixed(3)} ms) | (p50 ${median(row.latency[16]!.p50).toFixed(3)}) | (p99 ${median(row.latency[16]!.p99).toFixed(3)}) | (p50 ${median(row.latency[64]!.p50).toFixed(3)}) | (p99 ${median(row.latency[64]!.p99).toFixed(3)}) |`
        : `| ${row.target} | ${median(row.rps).toFixed(0)} | ${median(row.cpuMicros).toFixed(0)}${spread(row.cpuMicros)} | ${added(row, 1, 'p50')} | ${added(row, 16, 'p50')} | ${added(row, 16, 'p99')} | ${added(row, 64, 'p50')} | ${added(row, 64, 'p99')} |`,
    ),
    '',
    `Ratios, each the median of the rounds' own ratios: Tollgate CPU/request is ${median(ratios.bare).toFixed(2)}×${spread(ratios.bare, 2)} the bare proxy's (issue 19's target ≤ 1.15×)${portkey ? ` and ${median(ratios.peer).toFixed(2)}×${spread(ratios.peer, 2)} Portkey's (target ≤ 0.2×)` : ''}.`,
    '',
    '## Streams',
    '',
    `Each stream: 64 content chunks, one every 20 ms from the mock (the streams alone: 4 content chunks, ${QUICK ? 24 : 48} per target and round, the median taken). TTFT: time to the first content chunk, for streams opened one at a time (alone) and eight at once (where the last waits behind the others' admission on the one gateway core); gap: time between content chunks as read by the client; "max chunks per read" above 1 would mean chunks arrived batched.`,
    '',
    '| target | added TTFT, one stream alone (ms) | TTFT p50, 8 at once (ms) | added TTFT, 8 at once (ms) | gap p50 (ms) | gap p99 (ms) | chunks per stream | max chunks per read |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (row) =>
        `| ${row.target} | ${row === direct ? `(${median(row.ttftAlone).toFixed(2)} ms)` : (median(row.ttftAlone) - median(direct.ttftAlone)).toFixed(2)} | ${median(row.ttft).toFixed(2)} | ${row === direct ? '–' : (median(row.ttft) - median(direct.ttft)).toFixed(2)} | ${median(row.gapP50).toFixed(2)} | ${median(row.gapP99).toFixed(2)} | ${median(row.events)} | ${row.maxEventsPerRead} |`,
    ),
    '',
    ...streamLines,
    '## Targets of issue 19 measured in the tables above',
    '',
    `- Non-streamed CPU per request: ${median(ratios.bare).toFixed(2)}× the bare proxy's (target ≤ 1.15×): ${median(ratios.bare) <= 1.15 ? 'met' : 'not met'}`,
    `- Time to first token added by Tollgate, one stream alone: ${(median(tollgate.ttftAlone) - median(direct.ttftAlone)).toFixed(2)} ms (target ≤ 0.5 ms; the bare proxy adds ${(median(byName.get('bare node:http proxy')!.ttftAlone) - median(direct.ttftAlone)).toFixed(2)} ms): ${median(tollgate.ttftAlone) - median(direct.ttftAlone) <= 0.5 ? 'met' : 'not met'}`,
    '',
    `## ${held.streams} concurrent streams on one Tollgate instance`,
    '',
    `- Completed: ${held.completed} of ${held.streams}; errors or non-200: ${held.non200}`,
    `- Resident memory: ${held.baselineMiB.toFixed(0)} MiB before, ${held.peakMiB.toFixed(0)} MiB at the peak (target < 300 MB)`,
    `- Longest gap between chunks: ${held.maxGapMs.toFixed(0)} ms (mock pace 50 ms); gaps over 500 ms (stalls): ${held.stalls}`,
    '',
    '## Settlement, holds and admission',
    '',
    '| what | per second | µs each | how |',
    '|---|---:|---:|---|',
    ...micro.map(
      (m) =>
        `| ${m.name} | ${Number.isFinite(m.perSecond) ? m.perSecond.toFixed(0) : '–'} | ${Number.isFinite(m.microsEach) ? m.microsEach.toFixed(1) : '–'} | ${m.note} |`,
    ),
    '',
    `Tollgate answered ${tollgate.non200} requests with something other than 200.`,
    '',
  ];
  const path = join(ROOT, 'docs/performance.md');
  const marker = '<!-- analysis: kept by the harness -->';
  const previous = existsSync(path) ? readFileSync(path, 'utf8') : '';
  const analysis = previous.includes(marker)
    ? previous.slice(previous.indexOf(marker))
    : `${marker}\n\n## Analysis\n\n(to be written)\n`;
  mkdirSync(join(ROOT, 'docs'), { recursive: true });
  writeFileSync(path, `${lines.join('\n')}\n${analysis}`);
  log(lines.join('\n'));
}

await main();
