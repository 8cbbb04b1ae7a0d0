// The benchmark harness: `npm run bench` (add `--quick` for one short round, `--no-peer` to skip Portkey,
// `--soak=SECONDS` for a memory soak, `--streams-only` for the stream sections alone, which then print and are not
// written to docs/performance.md; with it, `--cases=WORD` keeps the CPU-per-stream cases whose upstream names WORD,
// e.g. `--cases=anthropic`, and `--slow-streams=0` leaves out the slow-stream memory test; `--only=stream-cpu` is
// the CPU-per-stream cases alone, printed). Gateways are pinned to core 0, the mock upstream and this load
// generator to core 1. Results go to docs/performance.md; exit status 1 if Tollgate answered anything but 200.
import { execFileSync, execSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { CAN_PIN, residentMiB, startPinned, treeCpuSeconds, type Started } from './lib/processes.ts';
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
const SOAK_SECONDS = Number([...args].find((a) => a.startsWith('--soak='))?.slice(7) ?? 0);
const ROUNDS = QUICK ? 1 : 3;
/** Each round measures CPU in this many closed-loop slices per target, alternating between targets. */
const SLICES = QUICK ? 4 : 8;
const SLICE_MS = 1_500;
const LATENCY_MS = QUICK ? 2_000 : 4_000;
const CONCURRENT_STREAMS = 2_000;
/** Slow streams held open at once (one chunk a second each). */
const SLOW_STREAMS = Number([...args].find((a) => a.startsWith('--slow-streams='))?.slice(15) ?? 10_000);
/** CPU per stream: slices per target and case, and their length. */
const STREAM_SLICES = QUICK ? 2 : 6;
const STREAM_SLICE_MS = QUICK ? 750 : 1_000;
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
      log(
        streamSections(await streamCpu(bareTarget, tollgate.target, baseline?.target), undefined).join('\n'),
      );
      return;
    }
    if (STREAMS_ONLY) {
      const cases = await streamCpu(bareTarget, tollgate.target, baseline?.target);
      const slow = SLOW_STREAMS > 0 ? await slowStreams(tollgate.target, SLOW_STREAMS) : undefined;
      log(streamSections(cases, slow).join('\n'));
      return;
    }
    log('warming up …');
    for (const target of targets) {
      const warm = await closedLoop(target, 8, QUICK ? 1_000 : 3_000);
      rows.get(target.name)!.non200 += warm.non200;
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
        const alone = await streams(target, QUICK ? 4 : 8, 1);
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
    const slow = await slowStreams(tollgate.target, SLOW_STREAMS);
    const soak = SOAK_SECONDS > 0 ? await soakRun(tollgate.target, SOAK_SECONDS) : undefined;

    log('micro benchmarks …');
    const micro = [...(await settlementBench(PG_URL)), ...(await admissionBench(REDIS_URL))];
    writeReport([...rows.values()], ratios, held, soak, micro, streamSections(cases, slow));
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

interface Slow {
  streams: number;
  opened: number;
  completed: number;
  non200: number;
  baselineMiB: number;
  openMiB: number;
  peakMiB: number;
  maxGapMs: number;
  stalls: number;
  seconds: number;
}

/**
 * `count` slow streams open at once on Tollgate (the simulator at one chunk a second, ten chunks each): resident
 * memory with all of them open against the idle process, and the gaps between chunks (a stall is over 2 s).
 * The simulator needs no upstream sockets, so the test fits a 20,000-descriptor limit (two sockets per stream
 * otherwise); the processes' limit is the hard one (see package.json's bench script).
 */
async function slowStreams(target: Target, count: number): Promise<Slow> {
  log(`${count} concurrent slow streams (one chunk a second) through Tollgate …`);
  const started = performance.now();
  const baselineMiB = residentMiB(target.pid!);
  const pool = new Pool(target.origin, { connections: count, pipelining: 1, headersTimeout: 120_000 });
  const stats: StreamStats = { ttft: [], gaps: [], events: [], maxEventsPerRead: 0, non200: 0, completed: 0 };
  let peakMiB = baselineMiB;
  let openMiB = baselineMiB;
  const sampler = setInterval(() => {
    const now = residentMiB(target.pid!);
    peakMiB = Math.max(peakMiB, now);
    // Memory once every stream has its first chunk: all of them open at once.
    if (stats.ttft.length + stats.non200 >= count) openMiB = Math.max(openMiB, now);
  }, 250);
  const body = JSON.stringify(streamBody('model-slow', { max_tokens: 10 }));
  const all: Promise<void>[] = [];
  // Opened in steps of 500 every 250 ms (each is admitted, held and settled like any request): all are open
  // together for half of their ten seconds.
  for (let i = 0; i < count; i++) {
    if (i > 0 && i % 500 === 0) await new Promise((resolve) => setTimeout(resolve, 250));
    all.push(oneStream(pool, target, body, stats, '"content":"').catch(() => void (stats.non200 += 1)));
  }
  await Promise.all(all);
  clearInterval(sampler);
  await pool.close();
  const maxGapMs = stats.gaps.reduce((max, gap) => Math.max(max, gap), 0);
  return {
    streams: count,
    opened: stats.ttft.length,
    completed: stats.completed,
    non200: stats.non200,
    baselineMiB,
    openMiB,
    peakMiB,
    maxGapMs,
    stalls: stats.gaps.filter((g) => g > 2_000).length,
    seconds: (performance.now() - started) / 1000,
  };
}

/** The stream sections of docs/performance.md. */
function streamSections(cases: StreamCase[], slow: Slow | undefined): string[] {
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
    ...(slow === undefined ? [] : slowSection(slow)),
  ];
}

function slowSection(slow: Slow): string[] {
  const perStreamKiB = ((slow.openMiB - slow.baselineMiB) * 1024) / slow.streams;
  return [
    `## ${slow.streams} concurrent slow streams on one Tollgate instance`,
    '',
    `- Each: the simulator at one chunk a second, about ten chunks; opened 500 every 250 ms; ${slow.seconds.toFixed(0)} s in all`,
    `- Opened: ${slow.opened}; completed: ${slow.completed} of ${slow.streams}; errors or non-200: ${slow.non200}`,
    `- Resident memory: ${slow.baselineMiB.toFixed(0)} MiB idle, ${slow.openMiB.toFixed(0)} MiB with all open, ${slow.peakMiB.toFixed(0)} MiB at the peak: **${perStreamKiB.toFixed(1)} KiB per open stream** above idle (target ≤ 64 KB)`,
    `- Longest gap between chunks: ${slow.maxGapMs.toFixed(0)} ms (pace 1,000 ms); gaps over 2 s (stalls): ${slow.stalls}`,
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

/** Steady streaming load for `seconds`, sampling resident memory every 10 s. */
async function soakRun(target: Target, seconds: number): Promise<{ samples: number[] }> {
  log(`soak: ${seconds} s …`);
  const samples: number[] = [residentMiB(target.pid!)];
  const sampler = setInterval(() => samples.push(residentMiB(target.pid!)), 10_000);
  const stopAt = Date.now() + seconds * 1000;
  const pool = new Pool(target.origin, { connections: 200, pipelining: 1 });
  const stats: StreamStats = { ttft: [], gaps: [], events: [], maxEventsPerRead: 0, non200: 0, completed: 0 };
  const body = JSON.stringify({
    model: 'model-b',
    max_tokens: 16,
    stream: true,
    messages: [{ role: 'user', content: 'soak' }],
  });
  await Promise.all(
    Array.from({ length: 200 }, async () => {
      while (Date.now() < stopAt) await oneStream(pool, target, body, stats).catch(() => {});
    }),
  );
  clearInterval(sampler);
  samples.push(residentMiB(target.pid!));
  await pool.close();
  return { samples };
}

function writeReport(
  rows: Row[],
  ratios: { bare: number[]; peer: number[] },
  held: Held,
  soak: { samples: number[] } | undefined,
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
    `Ratios, each the median of the rounds' own ratios: Tollgate CPU/request is ${median(ratios.bare).toFixed(2)}×${spread(ratios.bare, 2)} the bare proxy's (target ≤ 1.3×)${portkey ? ` and ${median(ratios.peer).toFixed(2)}×${spread(ratios.peer, 2)} Portkey's (target ≤ 0.2×)` : ''}.`,
    '',
    '## Streams',
    '',
    'Each stream: 64 content chunks, one every 20 ms from the mock. TTFT: time to the first content chunk, for streams opened one at a time (alone) and eight at once (where the last waits behind the others\' admission on the one gateway core); gap: time between content chunks as read by the client; "max chunks per read" above 1 would mean chunks arrived batched.',
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
    ...(soak
      ? ['', `Soak: resident MiB every 10 s: ${soak.samples.map((s) => s.toFixed(0)).join(', ')}`]
      : ['', 'Soak: not run this time (`npm run bench -- --soak=600`).']),
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
