import type { Principal } from '../accounts/accounts-service.ts';

/** Who may call a route: anyone, a user's key, the admin key, or either key. */
export type RouteAuth = 'none' | 'user' | 'admin' | 'any';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | undefined;
  }
  interface FastifyContextConfig {
    auth?: RouteAuth;
  }
}
