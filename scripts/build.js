// `npm run build`: the server as JavaScript in dist/ (tsc, tsconfig.build.json) with the SQL migrations beside
// the module that reads them, then the dashboard in web/dist. `--server` builds the server only (npm pack's
// prepack; its prepare builds the dashboard). Plain JavaScript, so that a checkout installed without its dev
// dependencies gets this message rather than a type-stripping error from an older Node.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import process from 'node:process';
import { URL, fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);

function run(script, args) {
  const result = spawnSync(process.execPath, [script, ...args], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

let tsc;
try {
  tsc = require.resolve('typescript/bin/tsc');
} catch {
  process.stderr.write(
    'tollgate: the build needs the dev dependencies (typescript, vite): run `npm ci` first; `npm prune --omit=dev` afterwards keeps what was built\n',
  );
  process.exit(1);
}
rmSync(`${root}/dist`, { recursive: true, force: true });
run(tsc, ['-p', 'tsconfig.build.json']);
const migrations = `${root}/dist/store/migrations`;
mkdirSync(migrations, { recursive: true });
for (const file of readdirSync(`${root}/src/store/migrations`).filter((name) => name.endsWith('.sql')))
  copyFileSync(`${root}/src/store/migrations/${file}`, `${migrations}/${file}`);
if (!process.argv.includes('--server')) run(`${root}/scripts/prepare.js`, []);
