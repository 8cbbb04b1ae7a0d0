// Runs the tests with Node's own runner (docs/testing.md).
//
//   node scripts/test.ts                  every test: the unit tier, then the suites in test/
//   node scripts/test.ts --unit           the unit tier: src/**/*.test.ts, in-process, in one process (seconds)
//   node scripts/test.ts --integration    the suites in test/ (real ports, databases, child processes, a browser)
//   node scripts/test.ts --coverage ...   adds Node's coverage report of src/ to the unit tier
//   node scripts/test.ts <files> [flags]  just those files, each in its own process; flags go to `node --test`
import { spawnSync } from 'node:child_process';
import { globSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const TIERS = ['--unit', '--integration', '--coverage'];
const args = process.argv.slice(2);
const tier = (flag: string): boolean => args.includes(flag);
const passed = args.filter((arg) => !TIERS.includes(arg));

// Every test file is a process, and many start gateway processes: V8's compile cache (shared through the
// environment) spares each the compiling of the same modules again (docs/testing.md).
const env = {
  NODE_COMPILE_CACHE: fileURLToPath(new URL('../node_modules/.cache/node-compile-cache', import.meta.url)),
  ...process.env,
};

/** Runs `node --test` with the given arguments; resolves to its exit status. */
function nodeTest(testArgs: string[]): number {
  const result = spawnSync(process.execPath, ['--test', ...testArgs], { stdio: 'inherit', env });
  return result.status ?? 1;
}

if (passed.some((arg) => !arg.startsWith('-'))) {
  // Named files: each in its own process, two at a time.
  process.exit(nodeTest(['--test-concurrency=2', ...passed]));
}

const unitFiles = globSync('src/**/*.test.ts').sort();
const integrationFiles = globSync('test/**/*.test.ts').sort();
const onlyUnit = tier('--unit');
const onlyIntegration = tier('--integration');
let status = 0;

if (!onlyIntegration) {
  // Unit tests share nothing but the module cache, so one process runs them all: a process per file would
  // spend most of the tier's time starting up. The guard refuses sockets and child processes in it.
  const coverage = tier('--coverage')
    ? [
        '--experimental-test-coverage',
        '--test-coverage-include=src/**/*.ts',
        '--test-coverage-exclude=src/**/*.test.ts',
      ]
    : [];
  const guard = ['--import', fileURLToPath(new URL('unit-guard.ts', import.meta.url))];
  status = nodeTest(['--test-isolation=none', ...guard, ...coverage, ...passed, ...unitFiles]);
}
if (!onlyUnit) {
  // Each suite in its own process: they start servers, child processes and a browser, and set process state.
  // A unit failure does not stop them: one run reports every failure.
  status = nodeTest(['--test-concurrency=2', ...passed, ...integrationFiles]) || status;
}
process.exit(status);
