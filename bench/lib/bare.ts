import { join } from 'node:path';
import type { Target } from './load.ts';
import { startPinned, type Started } from './processes.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

/**
 * Starts the bare node:http proxy (bench/bare-proxy.ts) to the mock, pinned to core 0 like the gateways;
 * `launcher` (e.g. valgrind and its arguments) goes before node, which then has `readyMs` to start.
 */
export async function startBareProxy(
  mockPort: number,
  launcher: string[] = [],
  readyMs = 30_000,
): Promise<{ process: Started; target: Target }> {
  const [command, ...prefix] = [...launcher, process.execPath];
  const started = await startPinned(
    0,
    command,
    [...prefix, join(ROOT, 'bench/bare-proxy.ts')],
    { PROXY_TARGET: `http://127.0.0.1:${mockPort}` },
    /listening (\d+)/,
    readyMs,
  );
  return {
    process: started,
    target: {
      name: 'bare node:http proxy',
      origin: `http://127.0.0.1:${started.match[1]}`,
      path: '/v1/chat/completions',
      headers: {},
      pid: started.pid,
    },
  };
}
