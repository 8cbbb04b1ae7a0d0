import { createApp } from './app.ts';
import { ConfigError, loadConfig } from './config/load-config.ts';
import { createLogger } from './observability/create-logger.ts';
import { createMetricsServer, listenMetrics } from './observability/metrics-server.ts';
import { installFaultPolicy } from './observability/process-faults.ts';
import { createServices } from './services.ts';
import { createSecretBox } from './shared/secret-box.ts';
import { connectRedis } from './shared/connect-redis.ts';
import { migrate } from './store/migrate.ts';
import { createStore, openDb } from './store/store.ts';

/** Starts Tollgate: configuration, database and migrations, services, HTTP; drains on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`tollgate: configuration error: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);
  const store = createStore(openDb(config.databaseUrl), {
    secrets: createSecretBox(config.security.secretKeys),
  });
  const applied = await migrate(store.db);
  if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated');
  const resealed = await store.webhooks.resealSecrets();
  if (resealed > 0)
    logger.info({ resealed }, 'webhook signing secrets sealed with the current TOLLGATE_SECRET_KEY');
  const redis = config.redisUrl
    ? connectRedis(config.redisUrl, config.limiterFailurePolicy, logger)
    : undefined;
  if (redis && !(await redis.ready(3_000)))
    logger.warn('Redis is not reachable yet: limits are per instance until it is');
  const services = createServices({
    config,
    store,
    logger,
    ...(redis ? { limiter: redis.limiter, bus: redis.bus } : {}),
    // Many instances on PostgreSQL: credit is held in Redis, no database transaction per request.
    ...(redis && !store.db.capabilities.singleProcess ? { holds: redis.holds(store.ledger) } : {}),
  });
  const adminSecret = await services.accounts.ensureAdminKey();
  const app = createApp(services);
  // Recovery (spooled settlements, orphaned holds) finishes before the first request can take a new hold.
  await services.start();
  const address = await app.listen({ port: config.port, host: config.host });
  const metricsAddress = config.security.metricsAddress;
  const metricsServer = metricsAddress ? createMetricsServer(services.metrics, logger) : undefined;
  if (metricsServer && metricsAddress) {
    await listenMetrics(metricsServer, metricsAddress.host, metricsAddress.port);
    logger.info({ address: metricsAddress }, 'metrics served on their own address');
  }

  const where = config.databaseUrl.startsWith('postgres')
    ? 'PostgreSQL'
    : config.databaseUrl.replace(/^sqlite:/, '');
  process.stdout.write(
    [
      `Tollgate listening on ${address} (data: ${where})`,
      adminSecret ? `Admin key (shown once, keep it): ${adminSecret}` : undefined,
      `Dashboard: open ${config.publicUrl ?? address}/ in a browser to register, sign in and manage keys, usage, billing and webhooks`,
      `Register: curl -s ${config.publicUrl ?? address}/api/auth/register -H 'content-type: application/json' -d '{"email":"you@example.com","password":"a-long-password"}'`,
      '',
    ]
      .filter((line) => line !== undefined)
      .join('\n'),
  );

  let stopping = false;
  const stop = (signal: string, exitCode = 0): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'draining in-flight requests');
    const force = setTimeout(() => process.exit(1), 30_000);
    force.unref();
    metricsServer?.close();
    app
      .close()
      .then(() => services.close())
      .then(() => store.close())
      .then(() => process.exit(exitCode))
      .catch((error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      });
  };
  installFaultPolicy({ logger, metrics: services.metrics, stop });
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

await main();
