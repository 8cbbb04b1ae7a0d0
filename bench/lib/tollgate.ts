import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Target } from './load.ts';
import { startPinned, type Started } from './processes.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const ADMIN = 'tg-admin-bench-0123456789abcdef';

/**
 * The node flags of `root`'s start script (package.json: `node FLAGS src/main.ts`), so that each checkout runs
 * with its own V8 settings, as `npm start` starts it.
 */
export function startFlags(root: string = ROOT): string[] {
  const script = (
    JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }
  ).scripts.start;
  const words = script.split(/\s+/);
  return words
    .slice(words.indexOf('node') + 1, words.indexOf('src/main.ts'))
    .filter((w) => w.startsWith('--'));
}

/**
 * Starts Tollgate pinned to core 0 on a fresh embedded store, routing `model-b` to the mock, with one
 * Enterprise account holding ample credit, so nothing is refused; `nodeFlags` go after the start script's own
 * (startFlags: a later V8 flag wins) and before the entry point, and
 * `launcher` (a command and its arguments, e.g. valgrind's) before node, which then has `readyMs` to start.
 */
export async function startTollgate(
  mockPort: number,
  nodeFlags: string[] = [],
  root: string = ROOT,
  launcher: string[] = [],
  readyMs = 30_000,
): Promise<{ process: Started; target: Target; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
  const config = join(dir, 'tollgate.yaml');
  writeFileSync(
    config,
    [
      'providers:',
      `  - { id: mock, type: openai, base_url: "http://127.0.0.1:${mockPort}/v1" }`,
      `  - { id: mock-anthropic, type: anthropic, base_url: "http://127.0.0.1:${mockPort}/v1" }`,
      '  - { id: sim-fast, type: simulator, chunk_interval_ms: 0, first_token_ms: 0 }',
      '  - { id: sim-slow, type: simulator, chunk_interval_ms: 1000, first_token_ms: 0 }',
      'models:',
      '  model-b:',
      '    deployments: [{ provider: mock, model: mock-model }]',
      // Translated streams: the mock's Anthropic events, 20 or 200 text deltas sent at once.
      ...[20, 200].flatMap((chunks) => [
        `  model-a${chunks}:`,
        '    price: { input: 1, output: 2 }',
        '    context_window: 128000',
        `    deployments: [{ provider: mock-anthropic, model: mock-c${chunks}-i0 }]`,
      ]),
      // The simulator: one word per chunk (max_tokens bounds them), at once or one a second.
      '  model-s:',
      '    price: { input: 1, output: 2 }',
      '    context_window: 128000',
      '    deployments: [{ provider: sim-fast, model: gpt-4o-mini }]',
      '  model-slow:',
      '    price: { input: 1, output: 2 }',
      '    context_window: 128000',
      '    deployments: [{ provider: sim-slow, model: gpt-4o-mini }]',
      '',
    ].join('\n'),
  );
  // Started as `npm start` starts it (the checkout's package.json): the same V8 and malloc settings.
  const [command, ...prefix] = [...launcher, process.execPath];
  const started = await startPinned(
    0,
    command,
    [...prefix, ...startFlags(root), ...nodeFlags, join(root, 'src/main.ts')],
    {
      MALLOC_ARENA_MAX: '2',
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite:${join(dir, 'tollgate.db')}`,
      TOLLGATE_CONFIG: config,
      TOLLGATE_ADMIN_KEY: ADMIN,
      LOG_LEVEL: 'warn',
    },
    /listening on (http:\/\/[\d.:]+)/,
    readyMs,
  );
  const origin = started.match[1]!;
  const call = async (method: string, path: string, key: string, body?: unknown) => {
    const response = await fetch(`${origin}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return response.json() as Promise<any>;
  };
  const registered = (await (
    await fetch(`${origin}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'bench@example.com', password: 'benchmark-password' }),
    })
  ).json()) as any;
  const key: string = registered.api_key.key;
  await call('PUT', `/api/admin/accounts/${registered.account.id}/plan`, ADMIN, { plan: 'enterprise' });
  await call('POST', `/api/admin/accounts/${registered.account.id}/credits`, ADMIN, {
    amount_usd: 1_000_000,
  });
  return {
    process: started,
    dir,
    target: {
      name: 'Tollgate',
      origin,
      path: '/v1/chat/completions',
      headers: { authorization: `Bearer ${key}` },
      pid: started.pid,
    },
  };
}
