import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Config } from '../core/config.ts';
import { countPromptTokens } from '../gateway/count-tokens.ts';
import { parseChatRequest } from '../gateway/parse-chat-request.ts';
import { type Limiter, sharedLimiterOf } from '../core/rate-limits.ts';
import { utcDay } from '../core/time.ts';
import type { Store } from '../store/store.ts';

/** Connections opened before the instance says it is ready: a burst of first requests finds them open. */
export const WARM_CONNECTIONS = 5;

/**
 * What a new instance's first requests would otherwise pay for, done before it says it is ready: the
 * database's connections, each made to plan the request path's reads once (a new PostgreSQL backend loads its
 * catalog on a table's first use), the limiter's scripts, a chat request's parsing and token count. Failures are
 * logged, never fatal: an instance that could not warm up still serves.
 */
export async function warmUp(parts: {
  store: Store;
  limiter: Limiter;
  config: Config;
  logger: Logger;
  now: number;
}): Promise<void> {
  const { store, config } = parts;
  const model = config.models.keys().next().value;
  if (model !== undefined) {
    const body = { model, messages: [{ role: 'user', content: 'warm up the parser and the tokenizer' }] };
    countPromptTokens(parseChatRequest(body, config.models, config.maxMessages).request.messages);
  }
  const opened = store.db.warm?.(WARM_CONNECTIONS) ?? Promise.resolve();
  const results = await Promise.allSettled([
    opened.then(() =>
      Promise.all(Array.from({ length: WARM_CONNECTIONS }, () => readNothing(store, parts.now))),
    ),
    sharedLimiterOf(parts.limiter)?.warm(),
  ]);
  for (const result of results)
    if (result.status === 'rejected')
      parts.logger.warn({ err: result.reason }, 'warm-up step failed; first requests may be slower');
}

/** The request path's reads, of no key and no account: they find nothing, take nothing and write nothing. */
async function readNothing(store: Store, now: number): Promise<void> {
  await store.accounts.keyWithAccount('0'.repeat(64));
  await store.ledger.versionedBalance(NO_ACCOUNT, now);
  await store.ledger.balance(NO_ACCOUNT, now);
  await store.usage.keyDayTokens('key_warm_up', utcDay(now));
  // No such account: the row lock finds nothing and the transaction ends without a write.
  await store.ledger.hold('req_warm_up', NO_ACCOUNT, 1, now, now);
}

const NO_ACCOUNT = 'acct_warm_up';

/**
 * Requests no one is billed for, through the server in process (no socket), then a full garbage collection of
 * what start-up left (compiled schemas, migrations), which otherwise runs during the first requests as a pause
 * (docs/performance.md, cold start). The first answers of a route then cost what later ones do: a key that is not
 * valid walks the chat route's hooks, the key lookup and the error answer; the model list its serializer.
 */
export async function warmRequests(app: FastifyInstance): Promise<void> {
  const unknownKey = `tg-warm-up-${'0'.repeat(32)}`;
  await app.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    headers: { authorization: `Bearer ${unknownKey}`, 'content-type': 'application/json' },
    payload: '{}',
  });
  await app.inject({ method: 'GET', url: '/v1/models' });
  collectGarbage();
}

function collectGarbage(): void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed) return exposed();
  // V8 exposes `gc` to contexts created after the flag is set; the main context is unchanged.
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}
