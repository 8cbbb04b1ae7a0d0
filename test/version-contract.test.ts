import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { type RunningGateway, startGatewayProcess } from './helpers/process.ts';
import { openDb } from '../src/store/store.ts';
import { migrate } from '../src/store/migrate.ts';

/**
 * The version contract seen from an older build: this build plays the older one, on a database a newer
 * release migrated (a migration it does not know, and a schema that needs release 9.0.0). It refuses to start
 * and says why; forced, it starts. Running beside a newer release whose lease says it cannot run beside this
 * one, it drains and stops; and it is not ready while an instance older than it can run beside is alive.
 */
const ADMIN = 'tg-admin-contract-test-0123456789abcdef';
const postgres = BACKENDS.find((b) => b.name === 'postgres');
const postgresSkip = postgres
  ? await postgres.unavailable()
  : 'PostgreSQL backend excluded by TOLLGATE_TEST_BACKENDS';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A database a newer release migrated: a migration this build does not know, needing release 9.0.0. */
async function migratedByNewer(url: string): Promise<void> {
  const db = openDb(url);
  try {
    await migrate(db);
    await db.run("INSERT INTO schema_migrations (version, applied_at) VALUES ('099-from-the-future', $1)", [
      Date.now(),
    ]);
    await db.run(
      "INSERT INTO settings (name, value) VALUES ('fleet.oldest_release', '9.0.0') ON CONFLICT (name) DO UPDATE SET value = excluded.value",
    );
  } finally {
    await db.close();
  }
}

describe('an older build on a schema a newer release migrated', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-contract-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses to start and says why; TOLLGATE_FORCE_VERSION starts it anyway', async () => {
    const url = `sqlite:${join(dir, 'newer.db')}`;
    await migratedByNewer(url);
    const env = { DATABASE_URL: url, TOLLGATE_ADMIN_KEY: ADMIN };
    await assert.rejects(startGatewayProcess(env), (error: Error) => {
      assert.match(error.message, /refusing to start/);
      assert.match(error.message, /099-from-the-future/);
      assert.match(error.message, /needs release 9\.0\.0/);
      assert.match(error.message, /TOLLGATE_FORCE_VERSION/);
      return true;
    });
    const forced = await startGatewayProcess({ ...env, TOLLGATE_FORCE_VERSION: '1' });
    try {
      assert.match(forced.output(), /forced start/);
      const health = await fetch(`${forced.url}/health`);
      assert.equal(health.status, 200);
    } finally {
      forced.child.kill('SIGTERM');
      assert.equal(await forced.exited, 0);
    }
  });
});

describe('a database written by a release before the contract', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-contract-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('says so loudly at start-up when accounts were registered after the last contract instance stopped', async () => {
    const url = `sqlite:${join(dir, 'rolled-back.db')}`;
    const db = openDb(url);
    try {
      await migrate(db);
      // The last instance that knew the contract stopped ten minutes ago; an account was registered since.
      await db.run("INSERT INTO settings (name, value) VALUES ('fleet.last_seen_at', $1)", [
        String(Date.now() - 600_000),
      ]);
      await db.run(
        "INSERT INTO accounts (id, email, password_hash, plan, created_at) VALUES ('acct_rb', 'rb@example.com', 'x', 'free_trial', $1)",
        [Date.now()],
      );
    } finally {
      await db.close();
    }
    const gateway = await startGatewayProcess({ DATABASE_URL: url, TOLLGATE_ADMIN_KEY: ADMIN });
    try {
      assert.match(gateway.output(), /WRITTEN BY A RELEASE THAT DOES NOT KNOW THE VERSION CONTRACT/);
    } finally {
      gateway.child.kill('SIGTERM');
      assert.equal(await gateway.exited, 0);
    }
    // Started once since: the contract instance was seen after that account, so a second start is quiet.
    const again = await startGatewayProcess({ DATABASE_URL: url, TOLLGATE_ADMIN_KEY: ADMIN });
    again.child.kill('SIGTERM');
    assert.equal(await again.exited, 0);
    assert.doesNotMatch(again.output(), /DOES NOT KNOW THE VERSION CONTRACT/);
  });
});

describe('a running instance and the leases of other releases', { skip: postgresSkip ?? false }, () => {
  let opened: OpenedBackend;
  let gateway: RunningGateway | undefined;
  before(async () => {
    opened = await postgres!.open();
    const url = new URL(opened.url);
    url.searchParams.set('options', `-c search_path=${opened.schema!}`);
    gateway = await startGatewayProcess({ DATABASE_URL: url.toString(), TOLLGATE_ADMIN_KEY: ADMIN });
  });
  after(async () => {
    gateway?.child.kill('SIGKILL');
    await opened?.cleanup();
  });

  const lease = (id: string, release: string, oldestPeer: string) =>
    opened.db.run(
      `INSERT INTO instance_leases (instance_id, heartbeat_at, expires_at, release_version, schema_version, oldest_peer, reads)
       VALUES ($1, $2, $3, $4, '099-from-the-future', $5, '[]')`,
      [id, Date.now(), Date.now() + 120_000, release, oldestPeer],
    );
  const readiness = async () => {
    const response = await fetch(`${gateway!.url}/health/ready`);
    return { status: response.status, body: (await response.json()) as any };
  };

  it('is not ready while an instance older than it runs beside is alive, and ready once it is gone', async () => {
    assert.equal((await readiness()).status, 200);
    await lease('inst_ancient', '0.0.1', '0.0.1');
    let answer = await readiness();
    for (let i = 0; i < 60 && answer.status === 200; i++) {
      await sleep(250);
      answer = await readiness();
    }
    assert.equal(answer.status, 503);
    assert.match(JSON.stringify(answer.body), /inst_ancient runs release 0\.0\.1/);
    assert.match(gateway!.output(), /not ready/);
    await opened.db.run("DELETE FROM instance_leases WHERE instance_id = 'inst_ancient'");
    for (let i = 0; i < 60 && answer.status !== 200; i++) {
      await sleep(250);
      answer = await readiness();
    }
    assert.equal(answer.status, 200);
  });

  it('drains and stops (exit 0) when a newer release that cannot run beside it appears', async () => {
    await lease('inst_future', '9.0.0', '9.0.0');
    const code = await Promise.race([gateway!.exited, sleep(30_000).then(() => 'still running')]);
    assert.equal(code, 0, gateway!.output());
    assert.match(gateway!.output(), /cannot run beside this one: draining and stopping/);
    assert.match(gateway!.output(), /inst_future runs release 9\.0\.0/);
  });
});
