import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Checks } from './checks.ts';
import { chat, dashboard, register, stream, waitHealthy } from './gateway-http.ts';
import { must } from './run.ts';

/** What the package may hold: the built server and dashboard, the bin, the migrations, the docs npm adds. */
const ALLOWED = [
  /^package\/package\.json$/,
  /^package\/README\.md$/,
  /^package\/LICENSE$/,
  /^package\/bin\/tollgate\.js$/,
  /^package\/dist\/[\w/.-]+\.js$/,
  /^package\/dist\/store\/migrations\/\d{3}-[\w-]+(\.(postgres|sqlite))?\.sql$/,
  /^package\/web\/dist\/(index\.html|assets\/[\w.-]+\.(js|css))$/,
];
const REQUIRED = [
  'package/dist/main.js',
  'package/dist/cli/main.js',
  'package/dist/store/migrations/001-initial.sql',
  'package/web/dist/index.html',
  'package/bin/tollgate.js',
];

/** The environment less the gateway's own settings (a developer's shell may set some). */
export function withoutTollgateSettings(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const settings =
    /^(TOLLGATE_|DATABASE_URL$|REDIS_URL$|PORT$|HOST$|PUBLIC_URL$|SMTP_URL$|STRIPE_|NODE_ENV$)/;
  return Object.fromEntries(Object.entries(env).filter(([name]) => !settings.test(name)));
}

/**
 * `tollgate start` from a global install of the tarball, on the Node in `nodeDir`: the dashboard, a
 * completion and a stream, then SIGTERM drains and exits 0.
 */
async function startInstalled(prefix: string, nodeDir: string, work: string, port: number): Promise<void> {
  const child = spawn(
    join(prefix, 'bin', 'tollgate'),
    ['start', '--port', String(port), '--host', '127.0.0.1'],
    {
      cwd: work,
      env: {
        ...withoutTollgateSettings(process.env),
        PATH: `${nodeDir}:${join(prefix, 'bin')}:/usr/bin:/bin`,
        DATABASE_URL: `sqlite:${join(work, `node-${port}.db`)}`,
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout.on('data', (piece: Buffer) => (output += piece.toString()));
  child.stderr.on('data', (piece: Buffer) => (output += piece.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitHealthy(base, 60_000).catch((error: Error) => {
      throw new Error(`${error.message}\n${output}`);
    });
    await dashboard(base);
    const account = await register(base, `package-${port}@example.com`);
    assert.equal(await chat(base, account.key), 200);
    const streamed = await stream(base, account.key);
    assert.ok(streamed.chunks > 0 && streamed.done, JSON.stringify(streamed));
  } finally {
    child.kill('SIGTERM');
  }
  assert.equal(await exited, 0, `exit code after SIGTERM:\n${output}`);
}

/** Builds the package, checks what it holds, installs it globally, and runs it on Node 24 and Node 22. */
export async function packageChecks(checks: Checks, root: string, work: string): Promise<string | undefined> {
  checks.section('the npm package');
  let tarball = '';
  let prefix = '';
  await checks.check(
    'npm pack builds a package holding what runs and nothing else',
    async () => {
      await must('npm', ['pack', '--silent', '--pack-destination', work], { cwd: root });
      const name = readdirSync(work).find((file) => /^tollgate-.*\.tgz$/.test(file));
      assert.ok(name, 'no tarball');
      tarball = join(work, name);
      const files = (await must('tar', ['-tzf', tarball])).split('\n').filter(Boolean);
      const stray = files.filter((file) => !ALLOWED.some((pattern) => pattern.test(file)));
      assert.deepEqual(stray, [], 'files that do not run');
      for (const file of REQUIRED) assert.ok(files.includes(file), `${file} is missing`);
      checks.fact(`package: ${files.length} files, ${(statSync(tarball).size / 1024).toFixed(0)} KiB packed`);
    },
    { needed: true },
  );
  await checks.check(
    'npm install -g of the tarball puts `tollgate` on PATH',
    async () => {
      prefix = join(work, 'global');
      await must('npm', ['install', '--global', '--prefix', prefix, '--no-audit', '--no-fund', tarball]);
      const help = await must(join(prefix, 'bin', 'tollgate'), ['--help'], {
        env: { ...process.env, PATH: `${join(root, 'node_modules', 'node', 'bin')}:/usr/bin:/bin` },
      });
      assert.match(help, /^Usage: tollgate /);
      assert.match(help, /backup/);
    },
    { needed: true },
  );
  await checks.check('tollgate start on Node 24 serves the dashboard, a completion and a stream', () =>
    startInstalled(prefix, join(root, 'node_modules', 'node', 'bin'), work, 18_941),
  );
  await checks.check(
    'tollgate start on Node 22 serves the dashboard, a completion and a stream',
    async () => {
      const node22 = join(work, 'node22');
      await must('npm', ['install', '--prefix', node22, '--no-audit', '--no-fund', 'node@22']);
      const bin = join(node22, 'node_modules', 'node', 'bin');
      const version = (await must(join(bin, 'node'), ['--version'])).trim();
      assert.match(version, /^v22\./);
      checks.fact(`Node 22 used: ${version}`);
      await startInstalled(prefix, bin, work, 18_942);
    },
  );
  return prefix === '' ? undefined : prefix;
}
