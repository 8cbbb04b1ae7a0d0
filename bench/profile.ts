// Where Tollgate's CPU goes: `npm run bench:profile` (add `--seconds=N`, default 10; `--stream` profiles streams
// of 20 chunks sent at once by the mock, through the chat-completions fast path, instead of whole answers;
// `--chunks=N` for N chunks, `--model=model-s` for the simulator; `--connections=N`, default 16: 1 shows what a
// request costs alone; `--build=DIR` another checkout). Starts the mock upstream and Tollgate with `--cpu-prof`, as the harness does, drives N
// closed-loop connections, stops Tollgate, and prints the self time of the measured seconds' samples (start-up,
// warm-up and the stop left out) grouped by package or source file, then the top functions. The .cpuprofile stays
// in bench/profiles/ (open it in Chrome DevTools or speedscope for a flame graph).
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { option, profiledBody } from './lib/options.ts';
import { startMock } from './lib/mock.ts';
import { CAN_PIN } from './lib/processes.ts';
import { profileTollgate, type Share } from './lib/profile.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const OUT = join(ROOT, 'bench/profiles');
const SECONDS = Number(process.argv.find((a) => a.startsWith('--seconds='))?.slice(10) ?? 10);
const BODY = profiledBody();
const CONNECTIONS = Number(option('connections') ?? 16);
/** `--build=DIR`: profile another checkout's Tollgate (with its own node_modules), e.g. an older commit. */
const BUILD = option('build');

function print(title: string, rows: Share[], count: number): void {
  console.log(`\n${title}\n  share   µs/req`);
  for (const { name, share, micros } of rows.slice(0, count))
    console.log(`  ${(share * 100).toFixed(1).padStart(5)}%  ${micros.toFixed(1).padStart(6)}  ${name}`);
}

async function main(): Promise<void> {
  if (CAN_PIN) execFileSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });
  const { process: mock, port: mockPort } = await startMock();
  try {
    const summary = await profileTollgate({
      mockPort,
      body: BODY,
      connections: CONNECTIONS,
      seconds: SECONDS,
      outDir: OUT,
      build: BUILD,
    });
    console.log(
      `${summary.requests} requests, ${summary.perRequest.toFixed(1)} µs of CPU each (shares are of the busy samples)`,
    );
    print('by package or file', summary.groups, 30);
    print('by function', summary.functions, 40);
    console.log(`\nprofile: ${summary.file}`);
  } finally {
    await mock.stop();
  }
}

await main();
