import { join } from 'node:path';
import { startPinned, type Started } from './processes.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

/** Starts the mock upstream (bench/mock-upstream.ts) pinned to core 1, beside the load generator. */
export async function startMock(): Promise<{ process: Started; port: number }> {
  const started = await startPinned(
    1,
    process.execPath,
    [join(ROOT, 'bench/mock-upstream.ts')],
    {},
    /listening (\d+)/,
  );
  return { process: started, port: Number(started.match[1]) };
}
