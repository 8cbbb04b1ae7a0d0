import { spawn, spawnSync } from 'node:child_process';

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (no shell); its output is kept, and printed as it comes when `echo` is set. */
export function run(
  command: string,
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; echo?: boolean; input?: string } = {},
): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: options.env ?? process.env,
      cwd: options.cwd,
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (piece: Buffer) => {
      stdout += piece.toString();
      if (options.echo) process.stdout.write(piece);
    });
    child.stderr?.on('data', (piece: Buffer) => {
      stderr += piece.toString();
      if (options.echo) process.stderr.write(piece);
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

/** As `run`, but a non-zero exit throws with the command and the end of its output. */
export async function must(
  command: string,
  args: readonly string[],
  options: Parameters<typeof run>[2] = {},
): Promise<string> {
  const result = await run(command, args, options);
  if (result.code !== 0)
    throw new Error(
      `${command} ${args.join(' ')} exited ${result.code}:\n${(result.stderr || result.stdout).slice(-3000)}`,
    );
  return result.stdout;
}

/** Whether a command is on PATH. */
export const installed = (command: string): boolean =>
  spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;

/** Installs Debian packages (CI runs as root); waits for another apt run to finish rather than failing. */
export async function aptInstall(packages: readonly string[]): Promise<void> {
  if (packages.length === 0) return;
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const lock = ['-o', 'DPkg::Lock::Timeout=300'];
  await must('apt-get', [...lock, 'update', '-qq'], { env });
  await must('apt-get', [...lock, 'install', '-y', '-qq', '--no-install-recommends', ...packages], { env });
}
