import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fastifyHelmet from '@fastify/helmet';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync } from 'fastify';

/** Where `npm install` builds the dashboard (web/, see web/vite.config.ts). */
export const WEB_DIST = fileURLToPath(new URL('../../web/dist/', import.meta.url));

/** The dashboard's pages: each answers with the single-page app, which routes in the browser. */
export const DASHBOARD_PAGES = [
  '/',
  '/keys',
  '/usage',
  '/billing',
  '/webhooks',
  '/members',
  '/playground',
  '/settings',
  '/login',
  '/register',
  '/forgot-password',
  '/reset-password',
  '/verify-email',
  // The operator console (the app shows it to operators only; its API answers 403 to everyone else).
  '/operator',
  '/operator/accounts',
  '/operator/accounts/:id',
  '/operator/statistics',
  '/operator/deployments',
  '/operator/webhooks',
  '/operator/announcements',
  '/operator/audit',
] as const;

/**
 * The account dashboard: hashed assets cached for a year, index.html revalidated on every load, and a strict
 * Content-Security-Policy (scripts, styles and connections to this site only; no inline script) on all of
 * it (helmet's headers stay inside this plugin's scope). Only the listed pages serve the app: unknown paths
 * keep their 404 error object.
 */
export const webApp: FastifyPluginAsync<{ secure: boolean; root?: string }> = async (scope, options) => {
  const root = options.root ?? WEB_DIST;
  await scope.register(fastifyHelmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        fontSrc: ["'self'"],
        connectSrc: ["'self'"],
        objectSrc: ["'none'"],
        baseUri: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
      },
    },
    // The dashboard's own origin only; nothing here is meant to be embedded or opened cross-origin.
    crossOriginEmbedderPolicy: false,
    // Browsers ignore HSTS over plain HTTP; sent only when the operator serves the site over TLS.
    hsts: options.secure,
  });
  const built = existsSync(`${root}/index.html`);
  if (built) {
    await scope.register(fastifyStatic, {
      root: `${root}/assets`,
      prefix: '/assets/',
      immutable: true,
      maxAge: '365d',
      index: false,
      wildcard: true,
    });
  }
  for (const page of DASHBOARD_PAGES) {
    scope.get(page, async (_request, reply) => {
      if (!built) {
        return reply
          .status(503)
          .type('text/plain; charset=utf-8')
          .send('The dashboard is not built: run `npm install` (it builds web/ into web/dist).\n');
      }
      return reply.header('cache-control', 'no-cache').sendFile('index.html', root, { cacheControl: false });
    });
  }
};
