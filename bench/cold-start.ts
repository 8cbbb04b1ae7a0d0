/**
 * Cold start per store: `node bench/cold-start.ts [runs] [path]`. For SQLite, PostgreSQL alone and PostgreSQL +
 * Redis (a fresh database and a redis-server of its own, Redis emptied before each start so the instance is the
 * first of a new Redis generation), starts a new instance, waits for `path` (default /health/ready) to answer
 * 200, then sends five chat completions at once and one more, and five at once again a second later (a warm
 * instance under the same load), and prints each one's time from sending to the end of its body. Also
 * PostgreSQL + Redis with Redis kept (an instance joining a running deployment).
 */
import { type ColdRun, coldRun, prepareColdStore, STORE_KINDS } from '../test/helpers/cold-start.ts';

const runs = Number(process.argv[2] ?? 3);
const path = process.argv[3] ?? '/health/ready';

// The gateways' processes and pipes are unref'd (test helpers): this keeps the script alive meanwhile.
const alive = setInterval(() => {}, 1_000);
const rows: string[] = [];
const fmt = (ms: number): string => ms.toFixed(1);
const line = (label: string, run: ColdRun): string => {
  const firsts = run.first.map((r) => r.ms);
  const statuses = [...run.first, run.next].map((r) => r.status).join(',');
  const later = run.later.map((r) => r.ms);
  return `| ${label} | ${fmt(run.readyMs)} | ${fmt(Math.min(...firsts))}–${fmt(Math.max(...firsts))} | ${fmt(run.next.ms)} | ${fmt(Math.min(...later))}–${fmt(Math.max(...later))} | ${statuses} |`;
};

for (const kind of STORE_KINDS) {
  const store = await prepareColdStore(kind);
  try {
    const cases = kind === 'postgres+redis' ? [true, false] : [false];
    for (const empty of cases) {
      for (let i = 0; i < runs; i++) {
        if (empty) await store.emptyRedis();
        const run = await coldRun(store, path);
        const label =
          kind === 'postgres+redis' ? `${kind} (${empty ? 'Redis emptied' : 'Redis kept'})` : kind;
        rows.push(line(label, run));
        console.log(rows.at(-1));
        run.gateway.child.kill('SIGTERM');
        await run.gateway.exited;
      }
    }
  } finally {
    await store.cleanup();
  }
}

console.log(`\nwaited for ${path}; times in ms, each request from sending to the end of its body\n`);
console.log('| store | start → ready | five at once | the sixth | five at once, 1 s later | statuses |');
console.log('|---|---:|---:|---:|---:|---|');
for (const row of rows) console.log(row);
clearInterval(alive);
