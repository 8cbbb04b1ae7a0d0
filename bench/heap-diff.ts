// `node bench/heap-diff.ts BEFORE.heapsnapshot AFTER.heapsnapshot N [TOP]`: what N open streams (say) keep alive,
// per stream: the objects of AFTER less those of BEFORE, counted and sized by their V8 type and constructor or
// function name (self sizes; strings grouped as one), the largest TOP (40) first. Snapshots as `npm run bench --
// --only=soak --snapshots` takes them (node's --heapsnapshot-signal).
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: (string | string[])[] } };
  nodes: number[];
  strings: string[];
}

function tally(file: string): Map<string, { count: number; size: number }> {
  const data = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const fields = data.snapshot.meta.node_fields;
  const types = data.snapshot.meta.node_types[0] as string[];
  const width = fields.length;
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
  const out = new Map<string, { count: number; size: number }>();
  for (let i = 0; i < data.nodes.length; i += width) {
    const type = types[data.nodes[i + typeAt!]!]!;
    const name = data.strings[data.nodes[i + nameAt!]!]!;
    const key =
      type === 'string' || type === 'concatenated string' || type === 'sliced string'
        ? `(${type})`
        : `${type} ${name.length > 60 ? `${name.slice(0, 57)}…` : name}`;
    const entry = out.get(key) ?? { count: 0, size: 0 };
    entry.count += 1;
    entry.size += data.nodes[i + sizeAt!]!;
    out.set(key, entry);
  }
  return out;
}

const [beforeFile, afterFile, perArg, topArg] = process.argv.slice(2);
const per = Number(perArg ?? 1);
const before = tally(beforeFile!);
const after = tally(afterFile!);
const rows = [...after].map(([key, a]) => {
  const b = before.get(key) ?? { count: 0, size: 0 };
  return { key, count: (a.count - b.count) / per, size: (a.size - b.size) / per };
});
rows.sort((x, y) => y.size - x.size);
const total = rows.reduce((sum, r) => sum + r.size, 0);
const count = rows.reduce((sum, r) => sum + r.count, 0);
process.stdout.write(
  `per unit: ${count.toFixed(1)} objects, ${(total / 1024).toFixed(2)} KiB (self sizes)\n`,
);
for (const r of rows.slice(0, Number(topArg ?? 40)))
  process.stdout.write(`${r.size.toFixed(0).padStart(8)} B ${r.count.toFixed(2).padStart(8)}  ${r.key}\n`);
