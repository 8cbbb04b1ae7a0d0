// Non-streamed CPU per request of several Tollgate builds side by side, against the bare proxy, in one run:
// `node bench/request-cpu.ts --build=DIR --build=DIR …` (each DIR a checkout with node_modules; this checkout is
// always measured first), `--rounds=N` (default 3), `--slices=N` per round (default 6, 1.5 s each),
// `--connections=N` (default 16). The targets take turns in every slice, as the harness's non-streamed section
// does, so a before/after comparison of the request path is not at the mercy of the shared machine's load.
// `--stream` (with `--chunks=N`, default 20) measures whole streams the mock sends at once instead (use
// `--connections=1` for a lone stream); `--variant=F,G` adds this checkout once more, started with node flags F and
// G after its start script's (an A/B of runtime flags in the same slices).
import { cpuSlices } from './lib/cpu-slices.ts';
import { closedLoop } from './lib/load.ts';
import { option, optionValues, profiledBody } from './lib/options.ts';
import { median, ROOT, startSideBySide } from './lib/builds.ts';

const BUILDS = [ROOT, ...optionValues('build')];
const ROUNDS = Number(option('rounds') ?? 3);
const SLICES = Number(option('slices') ?? 6);
const CONNECTIONS = Number(option('connections') ?? 16);
const VARIANTS = optionValues('variant').map((flags) => flags.split(',').filter(Boolean));
const REQUEST = profiledBody();
const BARE = 'bare node:http proxy';

async function main(): Promise<void> {
  const run = await startSideBySide(BUILDS, VARIANTS);
  try {
    const targets = [run.bare, ...run.builds];
    for (const target of targets) await closedLoop(target, CONNECTIONS, 2_000, REQUEST);
    const micros = new Map(targets.map((t) => [t.name, [] as number[]]));
    const ratios = new Map(targets.map((t) => [t.name, [] as number[]]));
    for (let round = 1; round <= ROUNDS; round++) {
      const totals = await cpuSlices(targets, SLICES, 1_500, CONNECTIONS, REQUEST);
      const perRequest = (name: string): number => {
        const total = totals.get(name)!;
        if (total.non200 > 0)
          throw new Error(`${name} answered ${total.non200} requests with other than 200`);
        return (total.cpuSeconds * 1e6) / total.requests;
      };
      const line = targets.map((t) => {
        micros.get(t.name)!.push(perRequest(t.name));
        ratios.get(t.name)!.push(perRequest(t.name) / perRequest(BARE));
        return `${t.name} ${perRequest(t.name).toFixed(0)} µs (${(perRequest(t.name) / perRequest(BARE)).toFixed(2)}×)`;
      });
      console.log(`round ${round}/${ROUNDS}: ${line.join(', ')}`);
    }
    console.log(`\n| target | CPU µs/request (rounds) | ÷ bare proxy, median of rounds |\n|---|---:|---:|`);
    for (const t of targets)
      console.log(
        `| ${t.name} | ${median(micros.get(t.name)!).toFixed(0)} (${micros
          .get(t.name)!
          .map((m) => m.toFixed(0))
          .join(', ')}) | ${median(ratios.get(t.name)!).toFixed(2)}× |`,
      );
  } finally {
    await run.stop();
  }
}

await main();
