import type { IncomingMessage } from 'node:http';
import type { AccountRecord, ApiKeyRecord } from '../core/records.ts';
import type { Services } from './app-services.ts';
import { GatewayError } from '../core/gateway-error.ts';
import { CSRF_HEADER, sessionCookieName } from './session-cookie.ts';

/** The dashboard playground's chat route: the session's cookie and CSRF token stand in for an API key. */
export const PLAYGROUND_PATH = '/api/playground/chat/completions';

/** The key id every playground request of an account is metered, limited and listed under in usage. */
export const playgroundKeyId = (accountId: string): string => `playground_${accountId}`;

/**
 * The account's playground key: never stored, so it is never listed among the keys nor counted against the
 * plan's key cap; it has no controls of its own, and the plan's limits apply to it as to any key.
 */
export function playgroundKey(account: AccountRecord): ApiKeyRecord {
  return {
    id: playgroundKeyId(account.id),
    accountId: account.id,
    name: 'Playground',
    prefix: '',
    secretHash: '',
    allowedIps: null,
    status: 'active',
    createdAt: account.createdAt,
    revokedAt: null,
  };
}

/** One cookie's value from a Cookie header (undefined when absent or malformed). */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    try {
      return decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/**
 * The signed-in caller of a playground request: a live session from the cookie whose CSRF token the request
 * carries (so no other site can spend the account's money), on an account that is not suspended.
 */
export async function playgroundCaller(
  req: IncomingMessage,
  services: Pick<Services, 'sessions' | 'config'>,
): Promise<{ key: ApiKeyRecord; account: AccountRecord }> {
  const secret = cookieValue(req.headers.cookie, sessionCookieName(services.config));
  const found = secret === undefined ? undefined : await services.sessions.authenticate(secret);
  if (!found) throw new GatewayError('unauthorized', 'not signed in; sign in to use the playground');
  const token = req.headers[CSRF_HEADER];
  if (!services.sessions.csrfMatches(found.session, typeof token === 'string' ? token : undefined))
    throw new GatewayError('forbidden', `the playground needs the session's ${CSRF_HEADER} header`);
  if (found.account.status === 'suspended') throw new GatewayError('forbidden', 'this account is suspended');
  return { key: playgroundKey(found.account), account: found.account };
}
