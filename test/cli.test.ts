import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { type RunningGateway, startGatewayProcess } from './helpers/process.ts';

const BIN = fileURLToPath(new URL('../src/cli/tollgate.js', import.meta.url));
const ADMIN = 'tg-admin-cli-test-0123456789abcdef';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real `tollgate` bin with the project's node; resolves when it exits. */
function tollgate(args: readonly string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, NO_COLOR: '1', TOLLGATE_URL: undefined, TOLLGATE_ADMIN_KEY: undefined, ...env },
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

/** A loopback port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('the tollgate CLI', () => {
  let dir: string;
  let gateway: RunningGateway;
  let admin: (args: readonly string[]) => Promise<Run>;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-'));
    const config = join(dir, 'tollgate.yaml');
    writeFileSync(config, 'simulator:\n  chunk_interval_ms: 1\n');
    gateway = await startGatewayProcess({
      DATABASE_URL: `sqlite:${join(dir, 'gateway.db')}`,
      TOLLGATE_ADMIN_KEY: ADMIN,
      TOLLGATE_CONFIG: config,
    });
    admin = (args) => tollgate(args, { TOLLGATE_URL: gateway.url, TOLLGATE_ADMIN_KEY: ADMIN });
  });
  after(async () => {
    gateway.child.kill('SIGTERM');
    await gateway.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  const register = async (email: string): Promise<{ accountId: string; key: string; keyId: string }> => {
    const response = await fetch(`${gateway.url}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'correct horse battery' }),
    });
    const body: any = await response.json();
    assert.equal(response.status, 201, JSON.stringify(body));
    return { accountId: body.account.id, key: body.api_key.key, keyId: body.api_key.id };
  };

  it('every command has --help, and help exits 0', async () => {
    const commands = [
      [],
      ['start'],
      ['migrate'],
      ['backup'],
      ['config', 'check'],
      ['operator', 'create'],
      ['operator', 'list'],
      ['operator', 'remove'],
      ['accounts', 'list'],
      ['accounts', 'show'],
      ['accounts', 'suspend'],
      ['accounts', 'unsuspend'],
      ['accounts', 'grant'],
      ['accounts', 'set-plan'],
      ['keys', 'list'],
      ['keys', 'revoke'],
      ['usage', 'export'],
      ['announce'],
      ['announcements', 'list'],
      ['announcements', 'end'],
    ];
    const runs = await Promise.all(commands.map((command) => tollgate([...command, '--help'])));
    runs.forEach((run, i) => {
      const name = ['tollgate', ...(commands[i] ?? [])].join(' ');
      assert.equal(run.code, 0, `${name} --help: ${run.stderr}`);
      assert.ok(run.stdout.startsWith(`Usage: ${name} `), `${name} --help printed:\n${run.stdout}`);
      assert.equal(run.stderr, '');
    });
    assert.match(runs[0]?.stdout ?? '', /Exit codes:\n {2}0 {2}done/);
    assert.match(runs[0]?.stdout ?? '', /TOLLGATE_ADMIN_KEY/);
  });

  it('under an older node first on PATH, the bin re-runs itself with the checkout Node 24', (t) => {
    const system = spawnSync('/usr/bin/node', ['--version'], { encoding: 'utf8' });
    if (system.status !== 0 || Number(/^v(\d+)/.exec(system.stdout)?.[1]) >= 22) {
      t.skip('no Node older than 22 at /usr/bin/node');
      return;
    }
    const run = spawnSync('/usr/bin/node', [BIN, 'accounts', '--help'], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /^Usage: tollgate accounts /);
  });

  it('bad usage exits 2 with commander’s message', async () => {
    const unknown = await tollgate(['acounts', 'list']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown command 'acounts'/);
    assert.match(unknown.stderr, /Did you mean accounts\?/);
    const amount = await admin(['accounts', 'grant', 'acct_x', 'ten']);
    assert.equal(amount.code, 2);
    assert.match(amount.stderr, /amount_usd.*must be a positive amount of USD/);
    const missing = await tollgate(['usage', 'export', '--from', '2026-01-01']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /required option '--to <time>' not specified/);
    const order = await admin(['usage', 'export', '--from', '2026-02-01', '--to', '2026-01-01']);
    assert.equal(order.code, 2);
    assert.match(order.stderr, /--from must be before --to/);
  });

  it('a wrong admin key exits 4 saying the admin key was refused; a missing one says how to set it', async () => {
    const wrong = await tollgate(['accounts', 'list'], {
      TOLLGATE_URL: gateway.url,
      TOLLGATE_ADMIN_KEY: 'tg-admin-wrong-0000000000000000',
    });
    assert.equal(wrong.code, 4);
    assert.match(wrong.stderr, /^tollgate: the admin key was refused by http:\/\/127\.0\.0\.1:\d+ \(401\)/);
    assert.equal(wrong.stdout, '');
    const { key } = await register(`not-admin-${Date.now()}@example.com`);
    const user = await tollgate(['accounts', 'list'], { TOLLGATE_URL: gateway.url, TOLLGATE_ADMIN_KEY: key });
    assert.equal(user.code, 4);
    assert.match(user.stderr, /the admin key was refused .*\(403\)/);
    const none = await tollgate(['accounts', 'list', '--url', gateway.url]);
    assert.equal(none.code, 4);
    assert.match(none.stderr, /no admin key: set TOLLGATE_ADMIN_KEY/);
  });

  it('an unreachable gateway exits 3 naming the address', async () => {
    const port = await closedPort();
    const run = await tollgate(['accounts', 'list', '--url', `http://127.0.0.1:${port}`], {
      TOLLGATE_ADMIN_KEY: ADMIN,
    });
    assert.equal(run.code, 3);
    assert.equal(
      run.stderr,
      `tollgate: cannot reach the gateway at http://127.0.0.1:${port}: ECONNREFUSED\n`,
    );
  });

  it('lists, shows, grants, suspends and unsuspends an account, by e-mail or id, with --json that parses', async () => {
    const email = `cli-${Date.now()}@example.com`;
    const { accountId, key } = await register(email);

    const list = await admin(['accounts', 'list', '--search', email, '--json']);
    assert.equal(list.code, 0, list.stderr);
    const page = JSON.parse(list.stdout);
    assert.deepEqual(
      page.data.map((a: any) => a.id),
      [accountId],
    );
    const text = await admin(['accounts', 'list', '--search', email]);
    assert.match(text.stdout, /^ID +EMAIL +PLAN +STATUS +BALANCE_USD +CREATED_AT\n/);
    assert.ok(text.stdout.includes(email));
    assert.match(text.stdout, /1-1 of 1\n$/);

    const before = JSON.parse((await admin(['accounts', 'show', email, '--json'])).stdout);
    const grant = await admin(['accounts', 'grant', email, '12.5', '--expires', '2099-01-01', '--json']);
    assert.equal(grant.code, 0, grant.stderr);
    assert.equal(JSON.parse(grant.stdout).amount_usd, 12.5);
    assert.equal(JSON.parse(grant.stdout).expires_at, '2099-01-01T00:00:00.000Z');
    const after = JSON.parse((await admin(['accounts', 'show', accountId, '--json'])).stdout);
    assert.equal(after.account.id, accountId);
    assert.equal(Math.round((after.account.balance_usd - before.account.balance_usd) * 1e6), 12_500_000);

    const suspend = await admin(['accounts', 'suspend', accountId, '--reason', 'cli test']);
    assert.equal(suspend.code, 0, suspend.stderr);
    assert.equal(suspend.stdout, `suspended ${accountId}\n`);
    const client = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    const ask = () =>
      client.chat.completions.create({
        model: 'model-b',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 4,
      });
    await assert.rejects(ask(), (error: any) => error.status === 403 && /suspended/.test(error.message));
    const shown = await admin(['accounts', 'show', email]);
    assert.match(shown.stdout, /^status +suspended$/m);

    const unsuspend = await admin(['accounts', 'unsuspend', email, '--json']);
    assert.equal(JSON.parse(unsuspend.stdout).status, 'active');
    await ask();

    const plan = await admin(['accounts', 'set-plan', email, 'pro', '--json']);
    assert.equal(plan.code, 0, plan.stderr);
    assert.equal(JSON.parse(plan.stdout).plan, 'pro');

    const nobody = await admin(['accounts', 'show', 'nobody@example.com']);
    assert.equal(nobody.code, 1);
    assert.equal(nobody.stderr, 'tollgate: no account has the e-mail address nobody@example.com\n');
    const badPlan = await admin(['accounts', 'set-plan', accountId, 'platinum']);
    assert.equal(badPlan.code, 1);
    assert.match(badPlan.stderr, /^tollgate: the gateway refused the request \(400\): /);
  });

  it('keys list shows an account’s keys and keys revoke refuses the key’s next request', async () => {
    const email = `keys-${Date.now()}@example.com`;
    const { key, keyId } = await register(email);
    const list = await admin(['keys', 'list', email, '--json']);
    assert.equal(list.code, 0, list.stderr);
    const keys = JSON.parse(list.stdout).data;
    assert.deepEqual(
      keys.map((k: any) => [k.id, k.status]),
      [[keyId, 'active']],
    );
    assert.ok(!list.stdout.includes(key), 'a key list never holds the secret');
    const revoke = await admin(['keys', 'revoke', email, keyId]);
    assert.equal(revoke.code, 0, revoke.stderr);
    assert.match(revoke.stdout, new RegExp(`^revoked key ${keyId} of `));
    const client = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    await assert.rejects(
      client.chat.completions.create({ model: 'model-b', messages: [{ role: 'user', content: 'hi' }] }),
      (error: any) => error.status === 403 && /revoked/.test(error.message),
    );
    const text = await admin(['keys', 'list', email]);
    assert.match(text.stdout, new RegExp(`^${keyId} .* revoked `, 'm'));
  });

  it('operator create makes an account an operator whose own API key then runs the admin commands', async () => {
    const email = `op-${Date.now()}@example.com`;
    const { accountId, key } = await register(email);
    const before = await tollgate(['accounts', 'list'], {
      TOLLGATE_URL: gateway.url,
      TOLLGATE_ADMIN_KEY: key,
    });
    assert.equal(before.code, 4);
    const created = await admin(['operator', 'create', email, '--json']);
    assert.equal(created.code, 0, created.stderr);
    assert.equal(JSON.parse(created.stdout).id, accountId);
    assert.equal(JSON.parse(created.stdout).role, 'operator');
    const operators = JSON.parse((await admin(['operator', 'list', '--json'])).stdout);
    assert.ok(operators.data.some((a: any) => a.id === accountId));
    const asOperator = await tollgate(['accounts', 'show', email, '--json'], {
      TOLLGATE_URL: gateway.url,
      TOLLGATE_ADMIN_KEY: key,
    });
    assert.equal(asOperator.code, 0, asOperator.stderr);
    assert.equal(JSON.parse(asOperator.stdout).account.role, 'operator');
    const unknown = await admin(['operator', 'create', 'nobody-here@example.com']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^tollgate: the gateway refused the request \(404\)/);
  });

  it('usage export streams an account’s records as csv and jsonl, never their content', async () => {
    const email = `usage-${Date.now()}@example.com`;
    const { accountId, key, keyId } = await register(email);
    const secret = 'the-private-prompt-words-7f3a';
    const client = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    for (let i = 0; i < 3; i++)
      await client.chat.completions.create({
        model: 'model-b',
        messages: [{ role: 'user', content: `${secret} ${i}` }],
        max_tokens: 8,
      });
    const today = new Date().toISOString().slice(0, 10);
    const range = ['--from', today, '--to', today, '--account', email];

    const jsonl = await admin(['usage', 'export', ...range, '--format', 'jsonl']);
    assert.equal(jsonl.code, 0, jsonl.stderr);
    const records = jsonl.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    assert.equal(records.length, 3);
    for (const record of records) {
      assert.equal(record.account_id, accountId);
      assert.equal(record.key_id, keyId);
      assert.equal(record.model, 'model-b');
      assert.ok(record.total_tokens > 0);
    }
    assert.equal(jsonl.stderr, '', 'no progress line when stderr is not a terminal');

    const file = join(dir, 'usage.csv');
    const csv = await admin(['usage', 'export', ...range, '--format', 'csv', '--output', file]);
    assert.equal(csv.code, 0, csv.stderr);
    assert.equal(csv.stdout, '');
    assert.equal(csv.stderr, `wrote 3 csv rows to ${file}\n`);
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    assert.match(lines[0] ?? '', /^request_id,account_id,key_id,model,/);
    assert.equal(lines.length, 4);
    assert.deepEqual(
      lines.slice(1).map((line) => line.split(',')[0]),
      records.map((record) => record.request_id),
    );
    for (const output of [jsonl.stdout, readFileSync(file, 'utf8')]) assert.ok(!output.includes(secret));
  });

  it('announce posts a notice; a breaking change needs its effective date 90 days ahead', async () => {
    const retire = (days: number): Promise<Run> =>
      admin([
        ...['announce', 'model-a retires', '--body', 'Use model-d', '--models', 'model-a', '--breaking'],
        ...['--effective', new Date(Date.now() + days * 86_400_000).toISOString()],
      ]);
    const posted = await admin([
      'announce',
      'Maintenance',
      '--body',
      'Short restart',
      '--severity',
      'minor',
      '--json',
    ]);
    assert.equal(posted.code, 0, posted.stderr);
    const notice = JSON.parse(posted.stdout);
    assert.equal(notice.title, 'Maintenance');
    assert.equal(notice.severity, 'minor');
    assert.equal(notice.breaking, false);
    const early = await retire(89);
    assert.equal(early.code, 1);
    assert.match(early.stderr, /^tollgate: the gateway refused the request \(400\): .*effective_at/);
    const onTime = await retire(90.01);
    assert.equal(onTime.code, 0, onTime.stderr);
    assert.match(onTime.stdout, /^posted announcement \S+: model-a retires\n$/);
    const listed = JSON.parse((await admin(['announcements', 'list', '--json'])).stdout);
    assert.ok(listed.data.some((n: any) => n.id === notice.id && n.ends_at === null));
    const breaking = listed.data.find((n: any) => n.title === 'model-a retires');
    assert.equal(breaking.severity, 'critical', 'a breaking change defaults to the most serious severity');
    const chosen = await admin([
      ...['announce', 'model-c retires', '--body', 'Use model-d', '--breaking', '--severity', 'minor'],
      ...['--effective', new Date(Date.now() + 91 * 86_400_000).toISOString(), '--json'],
    ]);
    assert.equal(chosen.code, 0, chosen.stderr);
    assert.equal(JSON.parse(chosen.stdout).severity, 'minor', '--severity still decides');
    const ended = await admin(['announcements', 'end', notice.id, '--json']);
    assert.equal(ended.code, 0, ended.stderr);
    assert.ok(Date.parse(JSON.parse(ended.stdout).ends_at) <= Date.now());
    // The status page is a snapshot rebuilt every few seconds: wait for the notice, up to 15 s.
    let onStatusPage = false;
    for (const started = Date.now(); !onStatusPage && Date.now() - started < 15_000;) {
      const status = (await (await fetch(`${gateway.url}/status.json`)).json()) as any;
      onStatusPage = status.breaking_changes.some((n: any) => n.title === 'model-a retires');
      if (!onStatusPage) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.ok(onStatusPage, 'the breaking change is on the status page');
    const noDate = await admin(['announce', 'x', '--body', 'y', '--breaking']);
    assert.equal(noDate.code, 2);
    assert.match(noDate.stderr, /--breaking needs --effective/);
  });

  it('config check prints the resolved models, deployments and prices of a good file', async () => {
    const file = join(dir, 'good.yaml');
    writeFileSync(
      file,
      [
        'providers:',
        '  - { id: up, type: openai, base_url: "https://api.example/v1", api_key_env: CLI_UP_KEY }',
        'models:',
        '  model-b:',
        '    deployments: [{ provider: up, model: upstream-b, weight: 3 }]',
        '    fallbacks: [model-f]',
        '',
      ].join('\n'),
    );
    const env = { CLI_UP_KEY: 'sk-secret-value' };
    const text = await tollgate(['config', 'check', file], env);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`^${file} is valid: 6 models, 2 providers\n`));
    assert.match(text.stdout, /^model-b +0\.13 +0\.13 +65536 +model-f$/m);
    assert.match(text.stdout, /^model-b +up\/upstream-b +up +upstream-b +3$/m);
    assert.ok(!text.stdout.includes('sk-secret-value'), 'config check never prints a secret');

    const json = JSON.parse((await tollgate(['config', 'check', file, '--json'], env)).stdout);
    assert.equal(json.valid, true);
    const modelB = json.models.find((m: any) => m.id === 'model-b');
    assert.deepEqual(modelB.deployments, [
      { id: 'up/upstream-b', provider: 'up', upstream_model: 'upstream-b', weight: 3 },
    ]);
    assert.equal(modelB.input_usd_per_million, 0.13);
    assert.equal(json.providers.find((p: any) => p.id === 'up').api_key, 'set');
  });

  it('config check names the field that is wrong and exits 1', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'models:\n  model-b:\n    deployments: [{ provider: ghost, model: m }]\n');
    const run = await tollgate(['config', 'check', file]);
    assert.equal(run.code, 1);
    assert.equal(
      run.stderr,
      `tollgate: ${file} is not valid: models.model-b.deployments[0].provider: unknown provider id ghost\n`,
    );
    const json = await tollgate(['config', 'check', file, '--json']);
    assert.equal(json.code, 1);
    assert.match(JSON.parse(json.stdout).error, /^models\.model-b\.deployments\[0\]\.provider: /);
    const missing = await tollgate(['config', 'check', join(dir, 'missing.yaml')]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /cannot read .*missing\.yaml \(from the command line\)/);
    assert.ok(!missing.stderr.includes('TOLLGATE_CONFIG'), 'the path came from the command line');
  });

  it('config check names the file and line of a YAML syntax error, refuses an empty file, counts in words', async () => {
    const broken = join(dir, 'broken.yaml');
    writeFileSync(broken, 'models:\n  model-b:\n    fallbacks: [model-f\n  model-c: {}\n');
    const syntax = await tollgate(['config', 'check', broken]);
    assert.equal(syntax.code, 1);
    assert.match(syntax.stderr, new RegExp(`^tollgate: ${broken}:4:\\d+: YAML syntax error: \\S.*\n$`));
    const json = await tollgate(['config', 'check', broken, '--json']);
    assert.match(JSON.parse(json.stdout).error, new RegExp(`^${broken}:4:`));

    const empty = join(dir, 'empty.yaml');
    writeFileSync(empty, '# settings to come\n');
    const refused = await tollgate(['config', 'check', empty]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, new RegExp(`^tollgate: ${empty} \\(from the command line\\) is empty: `));

    const one = join(dir, 'one-provider.yaml');
    writeFileSync(one, 'simulator:\n  chunk_interval_ms: 1\n');
    const valid = await tollgate(['config', 'check', one]);
    assert.equal(valid.code, 0, valid.stderr);
    assert.match(valid.stdout, new RegExp(`^${one} is valid: 6 models, 1 provider\n`));
  });

  it('start --config blames --config, not TOLLGATE_CONFIG, for a file it cannot read (exit 2)', async () => {
    const missing = join(dir, 'not-there.yaml');
    const run = await tollgate(['start', '--config', missing], { TOLLGATE_CONFIG: join(dir, 'good.yaml') });
    assert.equal(run.code, 2);
    assert.match(run.stderr, new RegExp(`configuration error: cannot read ${missing} \\(from --config\\)`));
  });

  it('migrate applies every migration to a fresh SQLite file, then finds it up to date', async () => {
    const env = { DATABASE_URL: `sqlite:${join(dir, 'fresh', 'tollgate.db')}`, TOLLGATE_CONFIG: undefined };
    const first = await tollgate(['migrate', '--json'], env);
    assert.equal(first.code, 0, first.stderr);
    const applied: string[] = JSON.parse(first.stdout).applied;
    assert.equal(applied[0], '001-initial');
    assert.deepEqual(applied, [...applied].sort());
    assert.ok(applied.length >= 6);
    const second = await tollgate(['migrate'], env);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(second.stdout, 'the database is up to date\n');
  });

  it('migrate --status changes nothing and shows applied, pending and newer migrations and the schema’s oldest release', async () => {
    const env = { DATABASE_URL: `sqlite:${join(dir, 'status', 'tollgate.db')}`, TOLLGATE_CONFIG: undefined };
    const before = await tollgate(['migrate', '--status', '--json'], env);
    assert.equal(before.code, 0, before.stderr);
    const fresh = JSON.parse(before.stdout);
    assert.deepEqual(fresh.applied, []);
    assert.equal(fresh.pending[0], '001-initial');
    assert.equal(fresh.schema_oldest_release, null);
    assert.equal((await tollgate(['migrate'], env)).code, 0);
    const after = JSON.parse((await tollgate(['migrate', '--status', '--json'], env)).stdout);
    assert.deepEqual(after.pending, []);
    assert.deepEqual(
      after.applied.map((m: { version: string }) => m.version),
      fresh.pending,
    );
    assert.equal(after.schema_oldest_release, after.oldest_peer_release);
    assert.deepEqual(after.unknown, []);
    assert.deepEqual(after.instances, [], 'no instance is running');
    const text = await tollgate(['migrate', '--status'], env);
    assert.match(text.stdout, /this release +\S+ \(runs beside/);
    assert.match(text.stdout, /pending +none/);
    assert.match(text.stdout, /no live instances/);
  });

  it('start runs the gateway and stops it on SIGTERM with exit code 0', async () => {
    const child = spawn(process.execPath, [BIN, 'start', '--port', '0', '--host', '127.0.0.1'], {
      env: {
        ...process.env,
        DATABASE_URL: `sqlite:${join(dir, 'started.db')}`,
        TOLLGATE_ADMIN_KEY: ADMIN,
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const reap = (): void => void child.kill('SIGKILL');
    process.once('exit', reap);
    let output = '';
    child.stderr.on('data', (piece: Buffer) => (output += piece.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no listening line:\n${output}`)), 15_000);
      child.stdout.on('data', (piece: Buffer) => {
        output += piece.toString();
        const match = /listening on (http:\/\/[\d.:]+)/.exec(output);
        if (match?.[1]) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
    });
    assert.equal((await fetch(`${url}/health`)).status, 200);
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
    process.off('exit', reap);
    await assert.rejects(fetch(`${url}/health`), 'the gateway stopped with the CLI');
  });
});
