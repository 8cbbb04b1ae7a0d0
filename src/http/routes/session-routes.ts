import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Services } from '../app-services.ts';
import { GatewayError } from '../../core/gateway-error.ts';
import { iso, presentAccount } from '../present.ts';
import { clearSessionCookie, ownOrigin, sessionCookie, setSessionCookie } from '../session-cookie.ts';
import { sessionOf, userOf } from './principal.ts';
import { linkOrigin } from '../link-origin.ts';

const email = { type: 'string', minLength: 1, maxLength: 254 } as const;
const password = { type: 'string', minLength: 8, maxLength: 1024 } as const;
const body = (properties: Record<string, unknown>) =>
  ({
    body: { type: 'object', required: Object.keys(properties), additionalProperties: false, properties },
  }) as const;

/**
 * The dashboard's sign-in: sessions carried by an HttpOnly cookie, sign-out (here or everywhere), password
 * change and reset, verification resend, under `/api/auth`. Every answer about an e-mail is the same whether
 * it is registered.
 */
export const sessionRoutes: FastifyPluginAsync<Pick<Services, 'config' | 'sessions' | 'signups'>> = async (
  app,
  services,
) => {
  const { config, sessions } = services;
  const baseUrl = (request: FastifyRequest): string => linkOrigin(request.server, config);

  /** Sign-in has no session to hold a CSRF token yet: a browser's Origin must be this site's (login CSRF). */
  const sameOrigin = (request: FastifyRequest): void => {
    const origin = request.headers.origin;
    if (origin === undefined) return;
    // With PUBLIC_URL the whole origin must match; without it only the host, since a TLS-terminating proxy
    // in front makes the browser's scheme differ from the one this server sees.
    const expected = config.publicUrl ? ownOrigin(request, config) : request.host;
    let actual: string;
    try {
      actual = config.publicUrl ? new URL(origin).origin : new URL(origin).host;
    } catch {
      actual = '';
    }
    if (actual !== expected) throw new GatewayError('forbidden', 'cross-site sign-in requests are refused');
  };

  const presentSession = (signedIn: {
    session: { csrfToken: string; expiresAt: number };
    account: Parameters<typeof presentAccount>[0];
  }) => ({
    account: presentAccount(signedIn.account),
    // The web app shows its operator section only when this is true (the routes check it again).
    operator: signedIn.account.role === 'operator',
    csrf_token: signedIn.session.csrfToken,
    expires_at: iso(signedIn.session.expiresAt),
  });

  app.post<{ Body: { email: string; password: string } }>(
    '/login',
    { schema: body({ email, password: { type: 'string', minLength: 1, maxLength: 1024 } }) },
    async (request, reply) => {
      sameOrigin(request);
      const signedIn = await sessions.login(request.body.email, request.body.password, request.ip);
      setSessionCookie(reply, config, signedIn.secret, sessions.policy.absoluteMs);
      return presentSession(signedIn);
    },
  );

  // The session this browser holds (and its CSRF token, which only this site's own scripts can read).
  app.get('/session', async (request, reply) => {
    const secret = sessionCookie(request, config);
    const found = secret === undefined ? undefined : await sessions.authenticate(secret);
    if (!found) {
      if (secret !== undefined) clearSessionCookie(reply, config);
      throw new GatewayError('unauthorized', 'not signed in');
    }
    if (found.account.status === 'suspended')
      throw new GatewayError('forbidden', 'this account is suspended');
    return presentSession(found);
  });

  app.post('/logout', { config: { auth: 'session' } }, async (request, reply) => {
    await sessions.logout(sessionOf(request).session);
    clearSessionCookie(reply, config);
    return { signed_out: true };
  });

  app.post('/logout-everywhere', { config: { auth: 'session' } }, async (request, reply) => {
    const ended = await sessions.logoutEverywhere(sessionOf(request).account.id);
    clearSessionCookie(reply, config);
    return { signed_out: true, sessions_ended: ended };
  });

  app.post<{ Body: { current_password: string; new_password: string } }>(
    '/password',
    {
      config: { auth: 'session' },
      schema: body({
        current_password: { type: 'string', minLength: 1, maxLength: 1024 },
        new_password: password,
      }),
    },
    async (request) => {
      await sessions.changePassword(
        sessionOf(request).session,
        request.body.current_password,
        request.body.new_password,
      );
      return { changed: true, other_sessions_ended: true };
    },
  );

  app.post<{ Body: { email: string } }>(
    '/password-reset',
    { schema: body({ email }) },
    async (request, reply) => {
      await sessions.requestPasswordReset(request.body.email, request.ip, baseUrl(request));
      return reply.status(202).send({
        status: 'accepted',
        message: 'if an account uses this e-mail address, a reset link valid for one hour is on its way',
      });
    },
  );

  app.post<{ Body: { token: string; password: string } }>(
    '/password-reset/confirm',
    { schema: body({ token: { type: 'string', minLength: 1, maxLength: 512 }, password }) },
    async (request, reply) => {
      await services.signups.check(request.ip);
      await sessions.confirmPasswordReset(request.body.token, request.body.password);
      clearSessionCookie(reply, config);
      return { reset: true };
    },
  );

  app.post('/resend-verification', { config: { auth: 'user' } }, async (request, reply) => {
    await sessions.resendVerification(userOf(request).account, request.ip, baseUrl(request));
    return reply.status(202).send({ status: 'sent' });
  });
};
