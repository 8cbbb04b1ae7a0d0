import type { Logger } from 'pino';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { countTextTokens } from '../gateway/count-tokens.ts';
import type { Limiter } from '../limits/limiter.ts';
import type { Db } from '../store/db.ts';

/** Connections opened before the instance says it is ready: a burst of first requests finds them open. */
export const WARM_CONNECTIONS = 5;

/**
 * What a new instance's first requests would otherwise pay for, done before it says it is ready: the
 * database's connections, the limiter's scripts, the tokenizer's first use, and a full garbage collection of
 * what start-up left (compiled schemas, migrations), which otherwise ran during the first requests (about 30 ms
 * of pause, measured). Failures are logged, never fatal: an instance that could not warm up still serves.
 */
export async function warmUp(parts: { db: Db; limiter: Limiter; logger: Logger }): Promise<void> {
  countTextTokens('warm up the tokenizer');
  const results = await Promise.allSettled([parts.db.warm?.(WARM_CONNECTIONS), parts.limiter.warm?.()]);
  for (const result of results)
    if (result.status === 'rejected')
      parts.logger.warn({ err: result.reason }, 'warm-up step failed; first requests may be slower');
  collectGarbage();
}

function collectGarbage(): void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed) return exposed();
  // V8 exposes `gc` to contexts created after the flag is set; the flag stays on, the main context unchanged.
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}
