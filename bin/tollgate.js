#!/usr/bin/env node
// The `tollgate` bin. In a checkout (src/ present) it runs the TypeScript source as development does
// (src/cli/tollgate.js); in the installed package, which holds only the built JavaScript, it runs dist/.
import { existsSync } from 'node:fs';
import process from 'node:process';
import { URL } from 'node:url';

const SOURCE = new URL('../src/cli/tollgate.js', import.meta.url);
const BUILT = new URL('../dist/cli/main.js', import.meta.url);
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);

if (existsSync(SOURCE)) {
  await import(SOURCE.href);
} else if (major > 22 || (major === 22 && minor >= 16)) {
  await import(BUILT.href);
} else {
  process.stderr.write(
    `tollgate: needs Node 22.16 or newer, or Node 24 (found ${process.version} at ${process.execPath})\n`,
  );
  process.exit(1);
}
