import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type RunningGateway, startGatewayProcess } from './helpers/process.ts';
import { until } from './helpers/until.ts';

const BIN = fileURLToPath(new URL('../src/cli/tollgate.js', import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real `tollgate` bin with the given environment; resolves when it exits. */
function tollgate(args: readonly string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, NO_COLOR: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (piece: Buffer) => (stdout += piece.toString()));
    child.stderr.on('data', (piece: Buffer) => (stderr += piece.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const chat = (url: string, key: string): Promise<Response> =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'model-a', messages: [{ role: 'user', content: 'hello' }] }),
  });

const usageRequests = async (url: string, key: string): Promise<number> => {
  const response = await fetch(`${url}/api/usage?group_by=model`, {
    headers: { authorization: `Bearer ${key}` },
  });
  const body: any = await response.json();
  assert.equal(response.status, 200, JSON.stringify(body));
  return (body.data as { requests: number }[]).reduce((sum, row) => sum + row.requests, 0);
};

describe('tollgate backup (the embedded store)', () => {
  let dir: string;
  let gateway: RunningGateway | undefined;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-backup-'));
  });
  after(async () => {
    if (gateway && gateway.child.exitCode === null) {
      gateway.child.kill('SIGTERM');
      await gateway.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('copies the database while the gateway serves, and a gateway started from the copy has its accounts', async () => {
    const live = join(dir, 'live.db');
    const copy = join(dir, 'copy.db');
    gateway = await startGatewayProcess({ DATABASE_URL: `sqlite:${live}` });
    const register = await fetch(`${gateway.url}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'backup@example.com', password: 'correct horse battery' }),
    });
    const registered: any = await register.json();
    assert.equal(register.status, 201, JSON.stringify(registered));
    const key: string = registered.api_key.key;
    for (let i = 0; i < 3; i++) assert.equal((await chat(gateway.url, key)).status, 200);
    // Settlements are written in batches shortly after each answer.
    const served = gateway.url;
    await until(async () => (await usageRequests(served, key)) >= 3, 'the three requests in the usage');
    const before = await usageRequests(gateway.url, key);

    // Requests keep arriving while the copy is made: the gateway is live and writing.
    let writing = true;
    const url = gateway.url;
    const traffic = (async () => {
      let served = 0;
      while (writing) if ((await chat(url, key)).status === 200) served++;
      return served;
    })();
    const run = await tollgate(['backup', copy], { DATABASE_URL: `sqlite:${live}` });
    writing = false;
    assert.ok((await traffic) > 0, 'no request was served during the backup');
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^backed up .*live\.db to .*copy\.db \(\d+ bytes, \d+ migrations applied\)\n$/);
    assert.equal(statSync(copy).mode & 0o777, 0o600, 'the copy holds secrets: owner only');
    assert.equal(existsSync(`${copy}-wal`), false, 'the copy is one file');
    assert.equal(existsSync(`${copy}.partial`), false);

    const again = await tollgate(['backup', copy], { DATABASE_URL: `sqlite:${live}` });
    assert.equal(again.code, 1);
    assert.match(again.stderr, /copy\.db exists: a backup never overwrites a file/);

    gateway.child.kill('SIGTERM');
    assert.equal(await gateway.exited, 0);

    gateway = await startGatewayProcess({ DATABASE_URL: `sqlite:${copy}` });
    assert.ok((await usageRequests(gateway.url, key)) >= before, 'the copy lost usage recorded before it');
    assert.equal((await chat(gateway.url, key)).status, 200, 'the key works on the copy');
    const account = await fetch(`${gateway.url}/api/account`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const restored: any = await account.json();
    assert.equal(account.status, 200, JSON.stringify(restored));
    assert.equal(restored.email ?? restored.account?.email, 'backup@example.com');
  });

  it('refuses PostgreSQL (pg_dump is the way) and an in-memory database, exit 1', async () => {
    const postgres = await tollgate(['backup', join(dir, 'x.db')], {
      DATABASE_URL: 'postgres://tollgate@127.0.0.1:5432/tollgate',
    });
    assert.equal(postgres.code, 1);
    assert.match(postgres.stderr, /DATABASE_URL is PostgreSQL: back it up with pg_dump/);
    const memory = await tollgate(['backup', join(dir, 'y.db')], { DATABASE_URL: 'sqlite::memory:' });
    assert.equal(memory.code, 1);
    assert.match(memory.stderr, /in-memory database/);
    const missing = await tollgate(['backup', join(dir, 'z.db')], {
      DATABASE_URL: `sqlite:${join(dir, 'absent.db')}`,
    });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /backup failed: no database at .*absent\.db/);
    assert.equal(existsSync(join(dir, 'z.db')), false);
  });
});
