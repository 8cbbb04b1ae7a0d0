import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { startRedisServer } from '../helpers/redis-server.ts';
import type { Checks } from './checks.ts';
import { ADMIN_KEY, exitCode, IMAGE } from './container-checks.ts';
import { chat, register, waitHealthy } from './gateway-http.ts';
import type { ComposeInstance } from './manifest-checks.ts';
import type { Podman } from './podman.ts';

const POSTGRES = process.env['TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const PORTS = [18_961, 18_962] as const;
const SECRET_KEY = 'container-test-secret-key-0123456789abcdef';

/**
 * compose.yaml's two instances, run with podman on the host network against this machine's PostgreSQL (a
 * database of this run's own, dropped after) and a redis-server of this run's own (never the shared one): the
 * same settings compose.yaml names, with host addresses for the service names.
 */
export async function instancesChecks(
  checks: Checks,
  podman: Podman,
  work: string,
  compose: ComposeInstance | undefined,
): Promise<void> {
  checks.section("compose.yaml's two instances on PostgreSQL and Redis");
  const database = `tollgate_ctr_${process.pid}`;
  const admin = new pg.Client({ connectionString: POSTGRES });
  const redis = await startRedisServer();
  const databaseUrl = new URL(POSTGRES);
  databaseUrl.pathname = `/${database}`;
  const yaml = join(work, 'instances.yaml');
  writeFileSync(yaml, 'simulator:\n  chunk_interval_ms: 5\n');
  const names = PORTS.map((port) => `tollgate-${port}`);
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    await checks.check(
      'both instances start against the shared PostgreSQL and Redis',
      async () => {
        assert.ok(compose, 'compose.yaml did not parse');
        const settings: Record<string, string> = {
          ...compose.environment,
          DATABASE_URL: databaseUrl.toString(),
          REDIS_URL: redis.url,
          TOLLGATE_ADMIN_KEY: ADMIN_KEY,
          TOLLGATE_SECRET_KEY: SECRET_KEY,
          TOLLGATE_TRUST_PROXY: '127.0.0.1',
          PUBLIC_URL: `http://127.0.0.1:${PORTS[0]}`,
        };
        assert.deepEqual(Object.keys(settings).sort(), Object.keys(compose.environment).sort());
        const env = Object.entries(settings).flatMap(([name, value]) => ['--env', `${name}=${value}`]);
        for (const [i, port] of PORTS.entries())
          await podman.must([
            'run',
            '--detach',
            '--name',
            names[i]!,
            '--network',
            'host',
            ...env,
            '--env',
            `PORT=${port}`,
            '--env',
            'HOST=127.0.0.1',
            '--volume',
            `${yaml}:${settings['TOLLGATE_CONFIG']}:ro`,
            IMAGE,
          ]);
        await Promise.all(PORTS.map((port) => waitHealthy(`http://127.0.0.1:${port}`, 60_000)));
      },
      { needed: true },
    );
    await checks.check(
      'a key made on one instance works on the other; revoked on one, refused (403) on the other',
      async () => {
        const [one, two] = PORTS.map((port) => `http://127.0.0.1:${port}`) as [string, string];
        const account = await register(one, 'instances@example.com');
        assert.equal(await chat(two, account.key), 200);
        const revoke = await fetch(`${one}/api/admin/accounts/${account.accountId}/keys/${account.keyId}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${ADMIN_KEY}` },
        });
        assert.equal(revoke.status, 200, await revoke.text());
        // Through Redis pub/sub: well before the key cache's 30 s would expire.
        const deadline = Date.now() + 5_000;
        let status = 200;
        while (status === 200 && Date.now() < deadline) status = await chat(two, account.key);
        assert.equal(status, 403, 'the other instance still accepts the revoked key');
      },
    );
    await checks.check('SIGTERM stops both, exit 0', async () => {
      await Promise.all(names.map((name) => podman.must(['stop', '--time', '30', name])));
      for (const name of names) assert.equal(await exitCode(podman, name), 0, name);
    });
  } finally {
    for (const name of names) await podman.run(['rm', '--force', '--time', '0', name]);
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => undefined);
    await admin.end().catch(() => undefined);
    await redis.stop();
  }
}
