// Time to first token of a stream opened alone, for several Tollgate builds and the bare proxy in one run, as the
// harness measures it (4 content chunks, the first 20 ms after the role chunk, streams one after another), but with
// the targets taking turns in every round so that a before/after comparison is not at the mercy of the machine:
// `node bench/ttft-alone.ts [--build=DIR …] [--variant=F,G …] [--rounds=N] [--streams=N]`. This checkout is always
// measured; `--variant` adds it once more started with node flags F, G. Prints each target's median added TTFT
// (its TTFT p50 less the direct mock's in the same round) per round and the median of the rounds.
import { CHAT_BODY, closedLoop, streams, summarize, type Target } from './lib/load.ts';
import { option, optionValues } from './lib/options.ts';
import { median, ROOT, startSideBySide } from './lib/builds.ts';

const BUILDS = [ROOT, ...optionValues('build')];
const VARIANTS = optionValues('variant').map((flags) => flags.split(',').filter(Boolean));
const ROUNDS = Number(option('rounds') ?? 5);
const STREAMS = Number(option('streams') ?? 48);
const DIRECT = 'mock (direct)';

async function main(): Promise<void> {
  const run = await startSideBySide(BUILDS, VARIANTS);
  try {
    const direct: Target = {
      name: DIRECT,
      origin: `http://127.0.0.1:${run.mockPort}`,
      path: '/v1/chat/completions',
      headers: {},
    };
    const targets = [direct, run.bare, ...run.builds];
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
        const lone = await streams(target, STREAMS, 1, { mock_chunks: 4 });
        if (lone.non200 > 0)
          throw new Error(`${target.name} answered ${lone.non200} streams with other than 200`);
        p50.set(target.name, summarize(lone.ttft).p50);
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
    await run.stop();
  }
}

/** The harness's warm-up stream: 20 chunks the mock sends at once. */
const STREAM_WARM_UP = { ...CHAT_BODY, stream: true, mock_chunks: 20, mock_interval_ms: 0 };

await main();
