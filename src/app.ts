import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { Socket } from 'node:net';
import fastifyCookie from '@fastify/cookie';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import './http/fastify-types.ts';
import { installAuth } from './http/auth-hook.ts';
import { installBodyLimits, OTHER } from './http/body-limits.ts';
import { createChatEndpoint, FRONT_DOOR_PATHS } from './http/chat-endpoint.ts';
import { trustFunction } from './http/client-address.ts';
import { answerDraining, installErrorHandling, RouteTable } from './http/error-handler.ts';
import { installOperatorAudit } from './http/operator-audit.ts';
import { installTextCheck } from './http/refuse-invalid-text.ts';
import { accountRoutes } from './http/routes/account-routes.ts';
import { adminRoutes } from './http/routes/admin-routes.ts';
import { announcementRoutes } from './http/routes/announcement-routes.ts';
import { authRoutes } from './http/routes/auth-routes.ts';
import { billingRoutes, checkoutPageRoutes, stripeWebhookRoutes } from './http/routes/billing-routes.ts';
import { keyRoutes } from './http/routes/key-routes.ts';
import { operatorReportRoutes } from './http/routes/operator-report-routes.ts';
import { operatorRoutes } from './http/routes/operator-routes.ts';
import { ownKeyRoutes } from './http/routes/own-key-routes.ts';
import { publicRoutes } from './http/routes/public-routes.ts';
import { sessionRoutes } from './http/routes/session-routes.ts';
import { statusRoutes } from './http/routes/status-routes.ts';
import { statsRoutes, usageRoutes } from './http/routes/usage-routes.ts';
import { webhookRoutes } from './http/routes/webhook-routes.ts';
import { cookieSecure } from './http/session-cookie.ts';
import { webApp } from './http/web-app.ts';
import type { Services } from './http/app-services.ts';

/** Request ids: a random per-process prefix and a counter, unique across instances and restarts. */
function createRequestIds(): () => string {
  const prefix = `req_${randomBytes(9).toString('base64url')}`;
  let counter = 0;
  return () => `${prefix}${(counter++).toString(36)}`;
}

/** While stopping, how often connections that finished their answer are closed. */
const IDLE_SWEEP_MS = 50;

/** Builds the HTTP application over the services: wiring only, no listening. */
export function createApp(services: Services): FastifyInstance {
  // Typed as Fastify's logger so the instance keeps Fastify's default generics.
  const logger: FastifyBaseLogger = services.logger;
  const nextRequestId = createRequestIds();
  let closing = false;
  const chat = createChatEndpoint({ services, nextRequestId, closing: () => closing });
  // Connections that have not sent a request yet: Node does not count them idle, so without this a client
  // that connects and says nothing would hold a shutdown open for minutes.
  const silent = new Set<Socket>();
  const app = Fastify({
    // The chat endpoint is served before Fastify sees the request; everything else goes to Fastify.
    serverFactory: (handler) => {
      const server = createServer((req, res) => {
        silent.delete(req.socket);
        if (chat(req, res)) return;
        // Fastify's own answer while closing is neither the spec's error object nor says when to retry.
        if (closing) answerDraining(res, nextRequestId());
        else handler(req, res);
      });
      server.on('connection', (socket: Socket) => {
        silent.add(socket);
        socket.once('close', () => silent.delete(socket));
      });
      // Fastify's own default, which it applies only to servers it creates: longer than proxies' idle timeouts.
      server.keepAliveTimeout = 72_000;
      return server;
    },
    loggerInstance: logger,
    // No per-request access log: usage records and /metrics carry that, without a synchronous write per request.
    logController: new LogController({ disableRequestLogging: true }),
    // Each route gets a limit of its own (http/body-limits.ts); this one is for unknown paths.
    bodyLimit: OTHER.bytes,
    genReqId: nextRequestId,
    trustProxy: trustFunction(services.config.trustProxy),
    return503OnClosing: false,
    // Bodies are read and copied by spread, never merged into existing objects: a "__proto__" key in JSON
    // stays a plain own property, so the poisoning scan is cost without protection here.
    onProtoPoisoning: 'ignore',
    onConstructorPoisoning: 'ignore',
    ajv: {
      // verbose: a failure carries its property's schema, whose description the error message uses.
      customOptions: {
        coerceTypes: false,
        removeAdditional: false,
        useDefaults: false,
        allErrors: false,
        verbose: true,
      },
    },
  });
  const routes = new RouteTable();
  app.addHook('onRoute', (route) => routes.add(route.url, route.method));
  // Every operator route, so that a test can hold each one to its 403 for everyone else.
  const operatorRouteList: { method: string; url: string }[] = [];
  app.decorate('operatorRoutes', operatorRouteList);
  app.addHook('onRoute', (route) => {
    if (route.config?.auth === 'admin')
      for (const method of [route.method].flat()) operatorRouteList.push({ method, url: route.url });
  });
  for (const path of FRONT_DOOR_PATHS) routes.add(path, 'POST');
  app.addHook('preClose', async () => {
    closing = true;
    for (const socket of silent) socket.destroy();
    // A connection whose answer was in flight at the stop becomes an idle keep-alive connection once the
    // answer is out, and Node closes idle connections only once, when the stop begins: the rest would hold
    // the stop open for the keep-alive timeout (72 s, past `main`'s forced exit). Close them as they go idle.
    const { server } = app;
    const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
    sweep.unref();
    server.once('close', () => clearInterval(sweep));
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // Every answer: a browser must never sniff JSON (or a tenant's text inside it) into HTML or script.
    reply.header('x-content-type-options', 'nosniff');
  });
  // Hooks, handlers and decorations on the root, before any route plugin: each plugin below is a child
  // context that inherits them (auth, the operator audit, the error and not-found handlers, the onRoute
  // listings above), and nothing a plugin adds inside leaks out to the others.
  installErrorHandling(app, routes);
  installBodyLimits(app, services.config.bodyLimitBytes);
  installTextCheck(app);
  void app.register(fastifyCookie);
  installAuth(app, services.accounts, { service: services.sessions, config: services.config });
  installOperatorAudit(app, services.operators);

  // Each route plugin gets only the services it uses, and its paths relative to its prefix.
  const { accounts, clock, config, metrics, operators, payments, sessions, signups } = services;
  const { readiness, startedAt, usage, webhooks } = services;
  const health = () => services.health();
  void app.register(publicRoutes, { accounts, config, health, metrics, readiness, startedAt });
  void app.register(statusRoutes, { config, operators });
  void app.register(authRoutes, { prefix: '/api/auth', accounts, signups });
  void app.register(sessionRoutes, { prefix: '/api/auth', config, sessions, signups });
  void app.register(accountRoutes, { prefix: '/api/account', accounts });
  void app.register(ownKeyRoutes, { prefix: '/api/key', accounts });
  void app.register(keyRoutes, { prefix: '/api/keys', accounts, config, clock });
  void app.register(usageRoutes, { prefix: '/api/usage', usage });
  void app.register(statsRoutes, { prefix: '/api/stats', usage });
  void app.register(webhookRoutes, { prefix: '/api/webhooks', webhooks });
  void app.register(billingRoutes, { prefix: '/api/billing', config, payments });
  void app.register(checkoutPageRoutes, { prefix: '/checkout', payments });
  void app.register(stripeWebhookRoutes, { prefix: '/api/payments/stripe', config, payments });
  void app.register(adminRoutes, { prefix: '/api/admin/accounts', accounts, config, operators });
  void app.register(operatorRoutes, { prefix: '/api/admin', accounts, config, operators });
  void app.register(operatorReportRoutes, { prefix: '/api/admin', operators });
  void app.register(announcementRoutes, { prefix: '/api/admin/announcements', config, operators });
  void app.register(webApp, { secure: cookieSecure(config) });
  return app;
}
