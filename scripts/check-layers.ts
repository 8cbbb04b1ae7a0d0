// Checks the floors of src/ (docs/architecture.md): builds the graph of relative imports between source files
// (tests excluded; `import type` counted, since a type that points up drags its file's whole room with it) and
// fails on any import cycle and on any import from a room to a room on a higher floor.
//
//   node scripts/check-layers.ts            check src/
//   node scripts/check-layers.ts <root>     check another tree laid out the same way (the script's own test)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/**
 * The floors, lowest first. A room is a folder directly under src/ or a file at its top; a room may import its
 * own floor's rooms and the floors below, never one above. Keep docs/architecture.md's picture in step.
 */
export const FLOORS: readonly (readonly string[])[] = [
  ['core'],
  ['shared'],
  ['store'],
  ['limits', 'jobs', 'fleet'],
  ['billing', 'webhooks'],
  ['accounts', 'payments', 'usage'],
  ['providers'],
  ['routing'],
  ['config'],
  ['observability'],
  ['gateway', 'operators', 'embeddings'],
  ['http'],
  ['composition'],
  ['app.ts', 'cli'],
  ['main.ts'],
];

/**
 * Imports between rooms tolerated while the chat vocabulary (request, stream events, sinks) still lives in
 * gateway/ on its way to core/, each `from -> to`. An entry that no longer occurs fails the check: delete it.
 */
export const PENDING: readonly string[] = [];

export type Graph = ReadonlyMap<string, readonly string[]>;

/** Every non-test .ts file under `root` and the files under `root` it imports by relative path. */
export function importGraph(root: string): Graph {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(root)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(join(root, file), 'utf8'), true, true);
    const targets = importedFiles
      .map((ref) => ref.fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) =>
        normalize(join(dirname(file), name))
          .split(sep)
          .join('/'),
      )
      .filter((target) => !target.startsWith('..'));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

function sourceFiles(root: string, folder = ''): string[] {
  const files: string[] = [];
  for (const name of readdirSync(join(root, folder)).sort()) {
    const path = folder === '' ? name : `${folder}/${name}`;
    if (statSync(join(root, path)).isDirectory()) files.push(...sourceFiles(root, path));
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts')) files.push(path);
  }
  return files;
}

/** The import cycles: each strongly connected set of two or more files (or a file importing itself). */
export function findCycles(graph: Graph): string[][] {
  // Tarjan's algorithm, iterative so a deep chain cannot overflow the stack.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  let next = 0;
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: [string, number][] = [[start, 0]];
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const [node, edge] = frame;
      if (edge === 0) {
        index.set(node, next);
        low.set(node, next);
        next += 1;
        stack.push(node);
        onStack.add(node);
      }
      const targets = graph.get(node) ?? [];
      if (edge < targets.length) {
        frame[1] += 1;
        const target = targets[edge]!;
        if (!graph.has(target)) continue;
        if (!index.has(target)) work.push([target, 0]);
        else if (onStack.has(target)) low.set(node, Math.min(low.get(node)!, index.get(target)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent !== undefined) low.set(parent[0], Math.min(low.get(parent[0])!, low.get(node)!));
      if (low.get(node) !== index.get(node)) continue;
      const members: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        members.push(member);
      } while (member !== node);
      if (members.length > 1 || targets.includes(node)) cycles.push(members.sort());
    }
  }
  return cycles;
}

/** The room of a file: its first folder, or the file itself at the top. */
export function roomOf(file: string): string {
  return file.split('/')[0]!;
}

/** The imports that run up a floor, as `from -> to`; a room missing from `floors` is reported too. */
export function findUpward(graph: Graph, floors: readonly (readonly string[])[]): string[] {
  const floorOf = new Map<string, number>();
  floors.forEach((rooms, floor) => rooms.forEach((room) => floorOf.set(room, floor)));
  const found: string[] = [];
  for (const [file, targets] of graph) {
    const from = floorOf.get(roomOf(file));
    if (from === undefined) {
      found.push(`${file}: room ${roomOf(file)} is on no floor`);
      continue;
    }
    for (const target of targets) {
      const to = floorOf.get(roomOf(target));
      if (to !== undefined && to > from) found.push(`${file} -> ${target}`);
    }
  }
  return found;
}

/** Every problem of the tree at `root`, one line each; empty when the floors hold. */
export function checkLayers(
  root: string,
  floors: readonly (readonly string[])[] = FLOORS,
  pending: readonly string[] = PENDING,
): string[] {
  const graph = importGraph(root);
  const problems = findCycles(graph).map(
    (files) => `import cycle (${files.length} files): ${files.join(', ')}`,
  );
  const upward = findUpward(graph, floors);
  problems.push(
    ...upward.filter((line) => !pending.includes(line)).map((line) => `import up a floor: ${line}`),
  );
  problems.push(
    ...pending
      .filter((line) => !upward.includes(line))
      .map((line) => `PENDING entry no longer occurs (delete it): ${line}`),
  );
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const defaultRoot = fileURLToPath(new URL('../src', import.meta.url));
  const root = process.argv[2] ?? defaultRoot;
  const problems = root === defaultRoot ? checkLayers(root) : checkLayers(root, FLOORS, []);
  for (const problem of problems) console.error(problem);
  const files = importGraph(root).size;
  console.log(
    `layers: ${files} files under ${relative(process.cwd(), root) || '.'}, ${problems.length} problems`,
  );
  process.exit(problems.length === 0 ? 0 : 1);
}
