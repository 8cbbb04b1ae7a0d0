// Runs every test file with Node's own runner: the suites beside the code and the cross-module ones in test/.
import { spawnSync } from 'node:child_process';
import { globSync } from 'node:fs';

const files = [...globSync('src/**/*.test.ts'), ...globSync('test/**/*.test.ts')].sort();
const extra = process.argv.slice(2);
const result = spawnSync(
  process.execPath,
  ['--test', '--test-concurrency=2', ...extra, ...(extra.some((a) => !a.startsWith('-')) ? [] : files)],
  {
    stdio: 'inherit',
  },
);
process.exit(result.status ?? 1);
