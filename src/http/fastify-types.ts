import type { Principal } from '../accounts/accounts-service.ts';
import type { SessionUser } from './session-cookie.ts';

/**
 * Who may call a route: anyone, a user's key (or dashboard session), the admin key, either key, or only a
 * dashboard session (sign-out, password change).
 */
export type RouteAuth = 'none' | 'user' | 'admin' | 'any' | 'session';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | undefined;
    /** Set instead of `principal` when the request came with the dashboard's session cookie. */
    sessionUser: SessionUser | undefined;
  }
  interface FastifyInstance {
    /** Every route declared `auth: 'admin'` (the operator routes), by method and path. */
    operatorRoutes: readonly { method: string; url: string }[];
  }
  interface FastifySchema {
    /** The media types of an answer that is not JSON (a page, a feed, an export); /openapi.json lists them. */
    produces?: readonly string[];
    /** One line for /openapi.json. */
    summary?: string;
  }
  interface FastifyContextConfig {
    auth?: RouteAuth;
    /**
     * A read that is management all the same (it shows a secret): refused to restricted keys like every
     * change. Changes (any method but GET, HEAD, OPTIONS) and operator routes are management without it.
     */
    manages?: boolean;
  }
}
