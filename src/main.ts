import { pino } from 'pino';
import { createApp } from './app.ts';
import { ConfigError, loadConfig } from './config/load-config.ts';
import { createServices } from './services.ts';
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
  const logger = pino({ level: config.logLevel });
  const store = createStore(openDb(config.databaseUrl));
  const applied = await migrate(store.db);
  if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated');
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
  });
  const adminSecret = await services.accounts.ensureAdminKey();
  const app = createApp(services);
  // Recovery (spooled settlements, orphaned holds) finishes before the first request can take a new hold.
  await services.start();
  const address = await app.listen({ port: config.port, host: config.host });

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
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'draining in-flight requests');
    const force = setTimeout(() => process.exit(1), 30_000);
    force.unref();
    app
      .close()
      .then(() => services.close())
      .then(() => store.close())
      .then(() => process.exit(0))
      .catch((error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

await main();
