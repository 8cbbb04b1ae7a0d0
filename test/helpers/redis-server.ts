import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

const run = promisify(execFile);

/**
 * Why this machine cannot start Redis servers of a test's own, or undefined when it can. A CI run must have
 * them: there the answer is an error, not a skip.
 */
export async function redisServerMissing(): Promise<string | undefined> {
  try {
    await run('redis-server', ['--version']);
    return undefined;
  } catch {
    const reason =
      'redis-server is not installed: install it (apt-get install redis-server) to run this test';
    if (process.env['CI'] === 'true') throw new Error(reason);
    return reason;
  }
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A port free now whose cluster bus port (+10000) is free too. */
async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 30_000);
    if ((await portFree(port)) && (await portFree(port + 10_000))) return port;
  }
}

export interface OwnRedis {
  port: number;
  url: string;
  /** Kills it (SIGKILL): everything in it is lost. */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

async function waitForPing(port: number): Promise<void> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.ping();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      client.disconnect();
    }
  }
}

/** A redis-server of the test's own on a free port, without persistence: never the shared one. */
export async function startRedisServer(extra: string[] = []): Promise<OwnRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'tg-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        ...extra,
      ],
      { stdio: 'ignore' },
    );
    child.on('error', () => {});
    const reap = (): void => void child?.kill('SIGKILL');
    process.once('exit', reap);
    child.once('exit', () => process.off('exit', reap));
    await waitForPing(port);
  };
  const kill = async (): Promise<void> => {
    const running = child;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve());
      running.kill('SIGKILL');
    });
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    kill,
    async restart() {
      await kill();
      rmSync(join(dir, 'nodes.conf'), { force: true });
      await start();
    },
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface OwnCluster {
  nodes: { host: string; port: number }[];
  stop(): Promise<void>;
}

/** Three cluster-enabled redis-servers of the test's own, joined into one cluster (no replicas). */
export async function startRedisCluster(): Promise<OwnCluster> {
  const servers: OwnRedis[] = [];
  try {
    for (let i = 0; i < 3; i++)
      servers.push(await startRedisServer(['--cluster-enabled', 'yes', '--cluster-node-timeout', '2000']));
    await run('redis-cli', [
      '--cluster',
      'create',
      ...servers.map((server) => `127.0.0.1:${server.port}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    const deadline = Date.now() + 10_000;
    for (;;) {
      const { stdout } = await run('redis-cli', ['-p', String(servers[0]!.port), 'cluster', 'info']);
      if (stdout.includes('cluster_state:ok')) break;
      if (Date.now() > deadline) throw new Error(`the cluster did not form:\n${stdout}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } catch (error) {
    await Promise.all(servers.map((server) => server.stop()));
    throw error;
  }
  return {
    nodes: servers.map((server) => ({ host: '127.0.0.1', port: server.port })),
    async stop() {
      await Promise.all(servers.map((server) => server.stop()));
    },
  };
}
