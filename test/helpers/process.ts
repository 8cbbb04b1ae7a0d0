import { type ChildProcess, spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

export interface RunningGateway {
  url: string;
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (or signal name) when the process ends. */
  exited: Promise<number | string>;
}

/**
 * Starts `node src/main.ts` as its own process (as `npm start` does) and waits until it listens; `main` runs
 * another build's entry point instead (an older release beside this one).
 */
export async function startGatewayProcess(
  env: Record<string, string>,
  options: { main?: string } = {},
): Promise<RunningGateway> {
  const child = spawn(process.execPath, [options.main ?? MAIN], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // A failed assertion must not leave a gateway running (its pipes would keep the test process alive).
  const reap = (): void => void child.kill('SIGKILL');
  process.once('exit', reap);
  child.once('exit', () => process.off('exit', reap));
  let output = '';
  child.stdout?.on('data', (piece: Buffer) => (output += piece.toString()));
  child.stderr?.on('data', (piece: Buffer) => (output += piece.toString()));
  // Piped stdio are sockets at run time; unref them so they alone never keep the test process alive.
  (child.stdout as unknown as Socket | null)?.unref();
  (child.stderr as unknown as Socket | null)?.unref();
  child.unref();
  const exited = new Promise<number | string>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start:\n${output}`)), 15_000);
    const check = (): void => {
      const match = /listening on (http:\/\/[\d.:]+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout?.on('data', check);
    void exited.then(() => reject(new Error(`gateway exited:\n${output}`)));
  });
  return { url, child, output: () => output, exited };
}
