// npm's `prepare` (run by `npm install`/`npm ci` in a checkout, and by `npm pack`): builds the dashboard with
// vite, a dev dependency. An install without dev dependencies (`npm ci --omit=dev`) has no vite: it keeps the
// dashboard already built, if any, instead of failing the install. Plain JavaScript: with --omit=dev the
// machine's own Node runs this, which may not strip types.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import process from 'node:process';
import { URL } from 'node:url';

const require = createRequire(import.meta.url);
let vite;
try {
  // vite's exports map hides its bin; its package.json is exported.
  vite = join(dirname(require.resolve('vite/package.json')), 'bin', 'vite.js');
} catch {
  const built = existsSync(new URL('../web/dist/index.html', import.meta.url));
  process.stderr.write(
    `tollgate: vite (a dev dependency) is not installed: dashboard not built${built ? ' (keeping the web/dist already built)' : ''}\n`,
  );
  process.exit(0);
}
const run = spawnSync(process.execPath, [vite, 'build', 'web', '--logLevel', 'warn'], { stdio: 'inherit' });
process.exit(run.status ?? 1);
