import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../core/config.ts';
import type { SessionRecord } from '../store/sessions-repo.ts';
import type { AccountRecord } from '../core/records.ts';

/** Methods that change nothing: every other method sent with the session cookie must carry the CSRF token. */
export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The header the dashboard sends its session's CSRF token in (a custom header cannot be sent cross-site). */
export const CSRF_HEADER = 'x-csrf-token';

/** A signed-in browser, as the auth hook found it. */
export interface SessionUser {
  session: SessionRecord;
  account: AccountRecord;
}

/** Whether cookies get `Secure`: when the operator's PUBLIC_URL says the site is served over TLS. */
export function cookieSecure(config: Config): boolean {
  return config.publicUrl?.startsWith('https://') ?? false;
}

/** The cookie's name: `__Host-` prefixed when Secure, so no subdomain or plain-HTTP page can set it. */
export function sessionCookieName(config: Config): string {
  return cookieSecure(config) ? '__Host-tollgate_session' : 'tollgate_session';
}

/** The session secret the request's cookie carries, if any. */
export function sessionCookie(request: FastifyRequest, config: Config): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  return request.server.parseCookie(header)[sessionCookieName(config)];
}

export function setSessionCookie(
  reply: FastifyReply,
  config: Config,
  secret: string,
  maxAgeMs: number,
): void {
  reply.setCookie(sessionCookieName(config), secret, {
    httpOnly: true,
    sameSite: 'lax',
    secure: cookieSecure(config),
    path: '/',
    maxAge: Math.floor(maxAgeMs / 1000),
  });
}

export function clearSessionCookie(reply: FastifyReply, config: Config): void {
  reply.clearCookie(sessionCookieName(config), {
    httpOnly: true,
    sameSite: 'lax',
    secure: cookieSecure(config),
    path: '/',
  });
}

/**
 * The origin this server is reached at, to compare a browser's Origin with: PUBLIC_URL when set, else the
 * request's own scheme and host. Never for links handed out (link-origin.ts).
 */
export function ownOrigin(request: FastifyRequest, config: Config): string {
  return config.publicUrl ? new URL(config.publicUrl).origin : `${request.protocol}://${request.host}`;
}
