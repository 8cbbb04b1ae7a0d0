#!/usr/bin/env node
// The `tollgate` bin. The CLI is TypeScript, which Node runs directly from 22.18 (type stripping on by
// default); the project requires Node 24. An older `node` first on PATH (a system Node 20, say) re-runs this
// CLI with the Node 24 of the `node` package that a checkout's devDependencies install.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import process from 'node:process';
import { URL, fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);

if (major > 22 || (major === 22 && minor >= 18)) {
  await import(MAIN);
} else {
  // In a checkout, and in a project that installed tollgate next to the `node` package.
  const projectNode = ['../../node_modules/node/bin/node', '../../../node/bin/node']
    .map((path) => fileURLToPath(new URL(path, import.meta.url)))
    .find((path) => existsSync(path));
  if (projectNode === undefined) {
    process.stderr.write(
      `tollgate: needs Node 24 (found ${process.version} at ${process.execPath}); install Node 24 or run \`npm install\` in the checkout\n`,
    );
    process.exit(1);
  }
  const child = spawn(projectNode, [MAIN, ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('error', (error) => {
    process.stderr.write(`tollgate: cannot run ${projectNode}: ${error.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 1)));
}
