// The ledger of what one request makes its gateway schedule and ask of the kernel, side by side with the bare proxy:
// `node bench/turn-ledger.ts [--stream [--chunks=N]] [--connections=N] [--seconds=N] [--build=DIR…] [--sites]`.
// Each gateway (this checkout, each DIR, the bare proxy) is pinned to core 0 and warmed up, then measured twice on
// the same closed-loop load (a lone request by default): once with bench/lib/turns-hook.ts counting async
// resources (promises, nextTicks, microtasks, immediates, timers armed, refreshed and cleared, write requests),
// once under `perf stat`, which counts the process's system calls by kind in the kernel (no ptrace: the process
// runs at its own speed, so a settlement batch holds as many requests as it does in the harness). Both are
// divided by the requests served in their window. `--sites` adds, per count, the code that made it (slow).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBareProxy } from './lib/bare.ts';
import { closedLoop, type Target } from './lib/load.ts';
import { startMock } from './lib/mock.ts';
import { option, optionValues, profiledBody } from './lib/options.ts';
import { CAN_PIN, type Started } from './lib/processes.ts';
import { startTollgate } from './lib/tollgate.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const BUILDS = [ROOT, ...optionValues('build')];
const SECONDS = Number(option('seconds') ?? 5);
const CONNECTIONS = Number(option('connections') ?? 1);
const SITES = process.argv.includes('--sites');
const REQUEST = profiledBody();
const HOOK = new URL('./lib/turns-hook.ts', import.meta.url).pathname;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Gateway {
  name: string;
  process: Started;
  target: Target;
  file: string;
  dir?: string;
}

/** The hook's counts over `SECONDS` of load, per request served. */
async function hookCounts(gateway: Gateway): Promise<{ perRequest: Map<string, number>; sites: object }> {
  process.kill(gateway.process.pid, 'SIGUSR2');
  await sleep(50);
  const run = await closedLoop(gateway.target, CONNECTIONS, SECONDS * 1_000, REQUEST);
  await sleep(50);
  rmSync(gateway.file, { force: true });
  process.kill(gateway.process.pid, 'SIGUSR2');
  for (let i = 0; i < 100; i++) {
    await sleep(50);
    try {
      const { counts, sites } = JSON.parse(readFileSync(gateway.file, 'utf8')) as {
        counts: Record<string, number>;
        sites: Record<string, number>;
      };
      const perRequest = new Map(Object.entries(counts).map(([k, v]) => [k, v / run.requests]));
      const perRequestSites = Object.fromEntries(
        Object.entries(sites)
          .filter(([, v]) => v / run.requests >= 0.05)
          .map(([k, v]) => [k, Number((v / run.requests).toFixed(2))]),
      );
      if (run.non200 > 0) throw new Error(`${gateway.name}: ${run.non200} answers other than 200`);
      return { perRequest, sites: perRequestSites };
    } catch (error) {
      if (error instanceof SyntaxError || (error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
  }
  throw new Error(`${gateway.name}: the hook wrote no counts`);
}

/** System calls by kind (all threads) over `SECONDS` of load, per request served, from `perf stat`. */
async function syscalls(gateway: Gateway): Promise<Map<string, number>> {
  const out = join(mkdtempSync(join(tmpdir(), 'turns-')), 'perf.csv');
  const perf = spawn('perf', [
    'stat',
    '-x,',
    '-o',
    out,
    '-e',
    'syscalls:sys_enter_*',
    '-p',
    String(gateway.process.pid),
    '--',
    'sleep',
    String(SECONDS + 0.2),
  ]);
  const done = new Promise<void>((resolve) => perf.on('exit', () => resolve()));
  await sleep(100);
  const run = await closedLoop(gateway.target, CONNECTIONS, SECONDS * 1_000, REQUEST);
  await done;
  const counts = new Map<string, number>();
  for (const line of readFileSync(out, 'utf8').split('\n')) {
    const [value, , event] = line.split(',');
    const n = Number(value);
    if (event?.startsWith('syscalls:sys_enter_') && n > 0)
      counts.set(event.slice('syscalls:sys_enter_'.length), n / run.requests);
  }
  rmSync(out, { force: true });
  return counts;
}

async function main(): Promise<void> {
  if (CAN_PIN) execFileSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });
  const { process: mock, port } = await startMock();
  const work = mkdtempSync(join(tmpdir(), 'turn-ledger-'));
  const gateways: Gateway[] = [];
  const saved = process.env['NODE_OPTIONS'];
  try {
    // The hook goes into each gateway through NODE_OPTIONS (the bare proxy's start takes no node flags).
    const withHook = (file: string): void => {
      process.env['NODE_OPTIONS'] = `${saved ?? ''} --import ${HOOK}`.trim();
      process.env['TURNS_HOOK_FILE'] = file;
      if (SITES) process.env['TURNS_SITES'] = '1';
    };
    withHook(join(work, 'bare.json'));
    const bare = await startBareProxy(port);
    gateways.push({ name: 'bare node:http proxy', ...bare, file: join(work, 'bare.json') });
    for (const [i, root] of BUILDS.entries()) {
      withHook(join(work, `build-${i}.json`));
      const started = await startTollgate(port, [], root);
      const commit = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD']).toString().trim();
      gateways.push({
        name: root === ROOT ? `${commit} (this)` : commit,
        ...started,
        file: join(work, `build-${i}.json`),
      });
    }
    if (saved === undefined) delete process.env['NODE_OPTIONS'];
    else process.env['NODE_OPTIONS'] = saved;
    for (const gateway of gateways) await closedLoop(gateway.target, CONNECTIONS, 3_000, REQUEST);
    const rows = new Map<string, Map<string, number>>();
    const allSites: Record<string, object> = {};
    for (const gateway of gateways) {
      const { perRequest, sites } = await hookCounts(gateway);
      const calls = await syscalls(gateway);
      const row = new Map<string, number>();
      for (const [k, v] of perRequest) row.set(k, v);
      let total = 0;
      for (const [k, v] of calls) {
        row.set(`syscall ${k}`, v);
        total += v;
      }
      row.set('syscall (all)', total);
      rows.set(gateway.name, row);
      allSites[gateway.name] = sites;
    }
    const names = [...rows.keys()];
    const keys = [...new Set(names.flatMap((n) => [...rows.get(n)!.keys()]))].sort();
    console.log(
      `\nper ${'stream' in REQUEST ? 'stream' : 'request'}, ${CONNECTIONS} at once, ${SECONDS} s each\n`,
    );
    console.log(`| what | ${names.join(' | ')} |\n|---|${names.map(() => '---:').join('|')}|`);
    for (const key of keys) {
      const values = names.map((n) => rows.get(n)!.get(key) ?? 0);
      if (values.every((v) => v < 0.01)) continue;
      console.log(`| ${key} | ${values.map((v) => v.toFixed(2)).join(' | ')} |`);
    }
    if (SITES) console.log(JSON.stringify(allSites, null, 1));
  } finally {
    await Promise.all([mock.stop(), ...gateways.map((g) => g.process.stop())]);
    for (const gateway of gateways) if (gateway.dir) rmSync(gateway.dir, { force: true, recursive: true });
    rmSync(work, { force: true, recursive: true });
  }
}

await main();
