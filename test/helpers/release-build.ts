import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface ReleaseBuild {
  /** The build's `src/main.ts`. */
  main: string;
  dir: string;
  cleanup(): void;
}

/** Why the commit cannot be built here (a shallow clone, no git), or undefined. */
export function releaseMissing(commit: string): string | undefined {
  try {
    execFileSync('git', ['cat-file', '-e', `${commit}^{commit}`], { cwd: ROOT, stdio: 'ignore' });
    return undefined;
  } catch {
    return `commit ${commit} is not in this clone (a shallow clone? fetch its history)`;
  }
}

/**
 * The tree of an earlier commit beside this one, runnable: its sources from `git archive`, this tree's
 * node_modules when its package-lock.json is the same (else `npm ci` there), and this tree's built dashboard
 * (web/dist; the dashboard is not what runs side by side).
 */
export function buildRelease(commit: string): ReleaseBuild {
  const dir = mkdtempSync(join(tmpdir(), `tollgate-release-${commit}-`));
  const archive = execFileSync(
    'git',
    ['archive', '--format=tar', commit, 'src', 'package.json', 'package-lock.json'],
    {
      cwd: ROOT,
      maxBuffer: 256 * 1024 * 1024,
    },
  );
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
  const sameLock =
    readFileSync(join(dir, 'package-lock.json'), 'utf8') ===
    readFileSync(join(ROOT, 'package-lock.json'), 'utf8');
  if (sameLock) symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  else
    execFileSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'ignore' });
  if (existsSync(join(ROOT, 'web', 'dist'))) {
    mkdirSync(join(dir, 'web'), { recursive: true });
    symlinkSync(join(ROOT, 'web', 'dist'), join(dir, 'web', 'dist'), 'dir');
  }
  return {
    main: join(dir, 'src', 'main.ts'),
    dir,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
