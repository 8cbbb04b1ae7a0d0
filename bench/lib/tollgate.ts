import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Target } from './load.ts';
import { startPinned, type Started } from './processes.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const ADMIN = 'tg-admin-bench-0123456789abcdef';

/**
 * Starts Tollgate pinned to core 0 on a fresh embedded store, routing `model-b` to the mock, with one
 * Enterprise account holding ample credit, so nothing is refused; `nodeFlags` go before the entry point.
 */
export async function startTollgate(
  mockPort: number,
  nodeFlags: string[] = [],
): Promise<{ process: Started; target: Target; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
  const config = join(dir, 'tollgate.yaml');
  writeFileSync(
    config,
    `providers:\n  - { id: mock, type: openai, base_url: "http://127.0.0.1:${mockPort}/v1" }\nmodels:\n  model-b:\n    deployments: [{ provider: mock, model: mock-model }]\n`,
  );
  // Started as `npm start` starts it (package.json): the same V8 and malloc settings.
  const started = await startPinned(
    0,
    process.execPath,
    [...nodeFlags, '--max-semi-space-size=4', join(ROOT, 'src/main.ts')],
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
