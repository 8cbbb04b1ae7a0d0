import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** Whether taskset can pin processes here. */
export const CAN_PIN = (() => {
  try {
    execFileSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

export interface Started {
  child: ChildProcess;
  pid: number;
  output(): string;
  stop(): Promise<void>;
}

/** Starts a command pinned to one core (when possible) and waits for `ready` in its output. */
export async function startPinned(
  core: number,
  command: string,
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
  timeoutMs = 30_000,
): Promise<Started & { match: RegExpExecArray }> {
  const [file, argv] = CAN_PIN ? ['taskset', ['-c', String(core), command, ...args]] : [command, args];
  const child = spawn(file, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (piece: Buffer) => (output += piece.toString()));
  child.stderr?.on('data', (piece: Buffer) => (output += piece.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const match = await new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${command} ${args.join(' ')} did not become ready:\n${output.slice(-2000)}`)),
      timeoutMs,
    );
    const check = (): void => {
      const found = ready.exec(output);
      if (found) {
        clearTimeout(timer);
        resolve(found);
      }
    };
    child.stdout?.on('data', check);
    child.stderr?.on('data', check);
    void exited.then(() => reject(new Error(`${command} exited:\n${output.slice(-2000)}`)));
  });
  return {
    child,
    pid: child.pid!,
    match,
    output: () => output,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

/** CPU seconds (user + system) a process has used, from the kernel's accounting. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** CPU seconds of a process and all its descendants that are alive (Portkey's launcher forks). */
export function treeCpuSeconds(pid: number): number {
  let total = cpuSeconds(pid);
  for (const child of childrenOf(pid)) total += treeCpuSeconds(child);
  return total;
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** Resident memory in MiB of a process and its descendants. */
export function residentMiB(pid: number): number {
  let kib = 0;
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    kib = Number(match?.[1] ?? 0);
  } catch {
    return 0;
  }
  return kib / 1024 + childrenOf(pid).reduce((sum, child) => sum + residentMiB(child), 0);
}
