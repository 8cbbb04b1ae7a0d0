import { parseArgs } from 'node:util';
import { createApp } from './app.ts';
import { ConfigError, type ConfigFile, loadConfig } from './config/load-config.ts';
import { createLogger } from './observability/create-logger.ts';
import { createMetricsServer, listenMetrics } from './observability/metrics-server.ts';
import { installFaultPolicy } from './observability/process-faults.ts';
import { warmRequests } from './composition/warm-up.ts';
import { createServices } from './composition/services.ts';
import { eventSettings } from './observability/request-events/event-settings.ts';
import { traceSettings } from './observability/tracing/trace-settings.ts';
import { createSecretBox, gatedSecretBox } from './shared/secret-box.ts';
import { checkSchemaBeforeStart, recordOldestRelease, VersionRefusal } from './fleet/schema-check.ts';
import { connectRedis } from './composition/connect-redis.ts';
import { migrate } from './store/migrate.ts';
import { createStore, openDb } from './store/store.ts';

/** `--config <file>` (what `tollgate start --config` passes), else TOLLGATE_CONFIG names the file. */
function configFileArgument(): ConfigFile | undefined {
  const { values } = parseArgs({ options: { config: { type: 'string' } }, strict: false });
  return typeof values.config === 'string' ? { path: values.config, source: '--config' } : undefined;
}

/** The operator forces this release to run on a newer schema or beside a newer release that asks it to stop. */
function forceVersion(): boolean {
  const { values } = parseArgs({ options: { 'force-version': { type: 'boolean' } }, strict: false });
  return (
    values['force-version'] === true || /^(1|true|yes)$/i.test(process.env['TOLLGATE_FORCE_VERSION'] ?? '')
  );
}

/** How long after a sealing pass the next one runs (the gate just opened, or the pass failed). */
const RESEAL_AGAIN_MS = 30_000;
/**
 * Starts Tollgate: configuration, database and migrations, services, HTTP; drains on SIGTERM/SIGINT. The
 * signal handlers are installed before anything starts: a signal during start-up is kept, and once the
 * server listens it drains and exits 0 as it would later, never killed half-started by the default action.
 */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env, configFileArgument());
    // The telemetry variables are read again where they are used; read here, a bad one is a clean refusal.
    traceSettings(process.env);
    eventSettings(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`tollgate: configuration error: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);
  // From here a signal never kills the process half-started: during start-up it is noted (a second one
  // exits at once), and start-up then drains instead of listening; once listening, it drains at once.
  let requested: { signal: string; exitCode: number } | undefined;
  let stop = (signal: string, exitCode = 0): void => {
    if (requested) {
      logger.warn({ signal }, 'second signal during start-up: exiting now');
      process.exit(1);
    }
    requested = { signal, exitCode };
    logger.info({ signal }, 'stopping once start-up has finished (send the signal again to exit now)');
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  // Secrets are sealed only once every live instance opens the sealed format (the version contract says).
  const box = createSecretBox(config.security.secretKeys);
  let sealAllowed = (_format: string): boolean => false;
  const store = createStore(openDb(config.databaseUrl), {
    secrets: gatedSecretBox(box, (format) => sealAllowed(format)),
  });
  const force = forceVersion();
  try {
    await checkSchemaBeforeStart(store.db, { logger, force });
  } catch (error) {
    if (!(error instanceof VersionRefusal)) throw error;
    logger.error({ reason: error.message }, 'refusing to start');
    console.error(`tollgate: refusing to start: ${error.message}`);
    await store.close();
    process.exit(3);
  }
  const applied = await migrate(store.db);
  if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated');
  await recordOldestRelease(store.db);
  const redis = config.redisUrl
    ? connectRedis(config.redisUrl, config.limiterFailurePolicy, logger)
    : undefined;
  if (config.smtpUrl && !config.publicUrl)
    logger.warn(
      'PUBLIC_URL is not set: links in mail (password reset, verification) point at the listening address, which recipients may not reach',
    );
  if (redis && !(await redis.ready(3_000)))
    logger.warn('Redis is not reachable yet: limits are per instance until it is');
  const services = createServices({
    config,
    store,
    logger,
    ...(redis ? { limiter: redis.limiter, bus: redis.bus } : {}),
    // Many instances on PostgreSQL: credit is held in Redis, no database transaction per request.
    ...(redis && !store.db.capabilities.singleProcess ? { holds: redis.holds(store.ledger) } : {}),
    forceVersion: force,
  });
  sealAllowed = (format) => services.fleet.readByAll(format);
  const sealsAs = box.sealsAs;
  if (sealsAs) {
    // Each time the gate opens, secrets stored in plaintext while it was shut are sealed; and once more a little
    // later, for a write that chose plaintext just before it opened and committed after the first pass. A pass
    // that fails is tried again then too.
    const reseal = (passesLeft: number): void => {
      store.webhooks
        .resealSecrets()
        .then((resealed) => {
          if (resealed > 0)
            logger.info({ resealed }, 'webhook signing secrets sealed with the current TOLLGATE_SECRET_KEY');
        })
        .catch((error: unknown) => logger.warn({ err: error }, 'could not seal the webhook signing secrets'))
        .finally(() => {
          if (passesLeft <= 0) return;
          setTimeout(() => {
            if (services.fleet.readByAll(sealsAs)) reseal(passesLeft - 1);
          }, RESEAL_AGAIN_MS).unref();
        });
    };
    services.fleet.whenReadByAll(sealsAs, () => reseal(2));
  }
  services.fleet.onMustStop(() => stop('version contract'));
  const adminSecret = await services.accounts.ensureAdminKey();
  const app = createApp(services);
  // Routes are compiled first, so the warm-up requests below find them ready and collect their garbage.
  await app.ready();
  // Recovery (spooled settlements, orphaned holds) finishes before the first request can take a new hold.
  await services.start();
  await warmRequests(app);

  const metricsAddress = config.security.metricsAddress;
  const metricsServer = metricsAddress ? createMetricsServer(services.metrics, logger) : undefined;
  let draining = false;
  services.readiness.require('not draining', () => !draining);
  /** The listens under way: a drain waits for them, so it closes servers that are listening. */
  let listening: Promise<string> = Promise.resolve('');
  /** Ends the process now; settlements still waiting go to the spool first (written synchronously). */
  const exitNow = (why: string): void => {
    const spooled = services.settlements.spoolNow();
    logger.warn({ spooled }, why);
    process.exit(1);
  };
  const drain = (signal: string, exitCode = 0): void => {
    if (draining) return;
    draining = true;
    logger.info({ signal }, 'draining in-flight requests (send the signal again to exit now)');
    const force = setTimeout(() => exitNow('the drain did not finish within 30 s: exiting now'), 30_000);
    force.unref();
    listening
      .catch(() => undefined)
      .then(() => {
        metricsServer?.close();
        return app.close();
      })
      .then(() => services.close())
      .then(() => store.close())
      .then(() => process.exit(exitCode))
      .catch((error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      });
  };
  installFaultPolicy({ logger, metrics: services.metrics, stop: drain });
  // A signal that came during start-up: drain (nothing was accepted) rather than start listening.
  if (requested) return drain(requested.signal, requested.exitCode);
  stop = (signal, exitCode) => {
    if (draining) exitNow(`second ${signal} while draining: exiting now`);
    else drain(signal, exitCode);
  };

  const listen = async (): Promise<string> => {
    const address = await app.listen({ port: config.port, host: config.host });
    if (metricsServer && metricsAddress) {
      await listenMetrics(metricsServer, metricsAddress.host, metricsAddress.port);
      logger.info({ address: metricsAddress }, 'metrics served on their own address');
    }
    return address;
  };
  listening = listen();
  const address = await listening;
  if (draining) return;

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
}

await main();
