// Time to first token of a stream opened alone, for several Tollgate builds and the bare proxy in one run, as the
// harness measures it (4 content chunks, the first 20 ms after the role chunk, streams one after another), but with
// the targets taking turns in every round so that a before/after comparison is not at the mercy of the machine:
// `node bench/ttft-alone.ts [--build=DIR …] [--variant=F,G …] [--rounds=N] [--streams=N]`. This checkout is always
// measured; `--variant` adds it once more started with node flags F, G. Prints each target's median added TTFT
// (its TTFT p50 less the direct mock's in the same round) per round and the median of the rounds.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { CHAT_BODY, closedLoop, streams, summarize, type Target } from './lib/load.ts';
import { option, optionValues } from './lib/options.ts';
import { startMock } from './lib/mock.ts';
import { CAN_PIN } from './lib/processes.ts';
import { startBareProxy } from './lib/bare.ts';
import { startTollgate } from './lib/tollgate.ts';
import { median, nameOf, ROOT } from './lib/builds.ts';

const BUILDS = [ROOT, ...optionValues('build')];
const VARIANTS = optionValues('variant').map((flags) => flags.split(',').filter(Boolean));
const ROUNDS = Number(option('rounds') ?? 5);
const STREAMS = Number(option('streams') ?? 48);
const DIRECT = 'mock (direct)';

async function main(): Promise<void> {
  if (CAN_PIN) execFileSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });
  const { process: mock, port: mockPort } = await startMock();
  const { process: bare, target: bareTarget } = await startBareProxy(mockPort);
  const builds = [];
  try {
    for (const dir of BUILDS) builds.push({ name: nameOf(dir), ...(await startTollgate(mockPort, [], dir)) });
    for (const flags of VARIANTS)
      builds.push({
        name: `${nameOf(ROOT)} ${flags.join(' ')}`,
        ...(await startTollgate(mockPort, flags, ROOT)),
      });
    const direct: Target = {
      name: DIRECT,
      origin: `http://127.0.0.1:${mockPort}`,
      path: '/v1/chat/completions',
      headers: {},
    };
    const targets = [direct, bareTarget, ...builds.map((b) => ({ ...b.target, name: b.name }))];
    // Warm code, as the harness has before it measures: whole answers, then lone streams.
    for (const target of targets) {
      await closedLoop(target, 8, 2_000);
      await closedLoop(target, 1, 2_000, STREAM_WARM_UP);
    }
    const added = new Map(targets.map((t) => [t.name, [] as number[]]));
    for (let round = 1; round <= ROUNDS; round++) {
      const order = round % 2 === 0 ? [...targets].reverse() : targets;
      const p50 = new Map<string, number>();
      for (const target of order) {
        const run = await streams(target, STREAMS, 1, { mock_chunks: 4 });
        if (run.non200 > 0)
          throw new Error(`${target.name} answered ${run.non200} streams with other than 200`);
        p50.set(target.name, summarize(run.ttft).p50);
      }
      const line = targets
        .filter((t) => t.name !== DIRECT)
        .map((t) => {
          const ms = p50.get(t.name)! - p50.get(DIRECT)!;
          added.get(t.name)!.push(ms);
          return `${t.name} ${ms.toFixed(3)}`;
        });
      console.log(`round ${round}/${ROUNDS} (direct ${p50.get(DIRECT)!.toFixed(2)} ms): ${line.join(', ')}`);
    }
    console.log('\n| target | added TTFT alone, ms (median of rounds) | rounds |\n|---|---:|---|');
    for (const t of targets.filter((t) => t.name !== DIRECT))
      console.log(
        `| ${t.name} | ${median(added.get(t.name)!).toFixed(3)} | ${added
          .get(t.name)!
          .map((m) => m.toFixed(3))
          .join(', ')} |`,
      );
  } finally {
    await Promise.all([mock.stop(), bare.stop(), ...builds.map((b) => b.process.stop())]);
    for (const b of builds) rmSync(b.dir, { force: true, recursive: true });
  }
}

/** The harness's warm-up stream: 20 chunks the mock sends at once. */
const STREAM_WARM_UP = { ...CHAT_BODY, stream: true, mock_chunks: 20, mock_interval_ms: 0 };

await main();
