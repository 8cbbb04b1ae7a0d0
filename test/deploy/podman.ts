import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { aptInstall, installed, must, type Ran, run } from './run.ts';

/** Kept between runs (debootstrap is most of a cold run); rebuilt when absent. */
const CACHE = '/var/tmp/tollgate-container-cache';
const BASE_TAR = join(CACHE, 'bookworm-minbase.tar');
export const BASE = 'docker.io/library/debian:bookworm-slim';
export const NODE_BASE = 'docker.io/library/node:24-bookworm-slim';

export interface Podman {
  /** `podman ARGS` against this run's own storage; throws on a non-zero exit. */
  must(args: readonly string[], options?: { echo?: boolean; cwd?: string }): Promise<string>;
  run(args: readonly string[]): Promise<Ran>;
  /** Removes every container and image of this run, and its storage. */
  cleanup(): Promise<void>;
}

/**
 * podman with runc (crun refuses this kernel's mixed cgroup layout), its storage and configuration in a
 * directory of this run's own, ulimits the host allows; installs podman, runc and debootstrap when missing.
 */
export async function preparePodman(): Promise<Podman> {
  await aptInstall(['podman', 'runc', 'debootstrap'].filter((tool) => !installed(tool)));
  mkdirSync('/var/tmp', { recursive: true });
  const dir = mkdtempSync('/var/tmp/tollgate-podman-');
  writeFileSync(
    join(dir, 'storage.conf'),
    `[storage]\ndriver = "overlay"\ngraphroot = "${dir}/storage"\nrunroot = "${dir}/runroot"\n`,
  );
  writeFileSync(
    join(dir, 'containers.conf'),
    [
      '[containers]',
      'default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]',
      '[engine]',
      'runtime = "runc"',
      'cgroup_manager = "cgroupfs"',
      'events_logger = "file"',
      '',
    ].join('\n'),
  );
  const env = {
    ...process.env,
    CONTAINERS_STORAGE_CONF: join(dir, 'storage.conf'),
    CONTAINERS_CONF: join(dir, 'containers.conf'),
  };
  const podman: Podman = {
    must: (args, options = {}) => must('podman', args, { env, ...options }),
    run: (args) => run('podman', args, { env }),
    async cleanup() {
      await run('podman', ['rm', '--all', '--force', '--time', '0'], { env });
      await run('podman', ['rmi', '--all', '--force'], { env });
      const mounts = readFileSync('/proc/mounts', 'utf8')
        .split('\n')
        .map((line) => line.split(' ')[1] ?? '')
        .filter((point) => point.startsWith(dir))
        .sort((a, b) => b.length - a.length);
      for (const point of mounts) await run('umount', ['-l', point]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return podman;
}

/** The Debian mirror apt uses here (deb822 `URIs:` or a sources.list line), else Debian's own. */
function debianMirror(): string {
  for (const file of ['/etc/apt/sources.list.d/debian.sources', '/etc/apt/sources.list']) {
    if (!existsSync(file)) continue;
    const text = readFileSync(file, 'utf8');
    const uri =
      /^URIs:\s*(\S+\/debian)\/?\s*$/m.exec(text) ??
      /^deb\s+(?:\[[^\]]*\]\s+)?(\S+\/debian)\/?\s/m.exec(text);
    if (uri?.[1]) return uri[1];
  }
  return 'http://deb.debian.org/debian';
}

/** A minimal bookworm root (debootstrap), as a tar in the cache; made once. */
async function baseTar(): Promise<string> {
  if (existsSync(BASE_TAR)) return BASE_TAR;
  mkdirSync(CACHE, { recursive: true });
  const rootfs = mkdtempSync(join(CACHE, 'rootfs-'));
  try {
    await must('debootstrap', ['--variant=minbase', 'bookworm', rootfs, debianMirror()]);
    await must('chroot', [rootfs, 'apt-get', 'clean']);
    for (const sub of [
      'var/lib/apt/lists',
      'usr/share/doc',
      'usr/share/man',
      'usr/share/info',
      'usr/share/locale',
    ])
      for (const entry of existsSync(join(rootfs, sub)) ? [join(rootfs, sub)] : [])
        rmSync(entry, { recursive: true, force: true });
    await must('tar', ['-C', rootfs, '--numeric-owner', '-cf', `${BASE_TAR}.partial`, '.']);
    renameSync(`${BASE_TAR}.partial`, BASE_TAR);
  } finally {
    rmSync(rootfs, { recursive: true, force: true });
  }
  return BASE_TAR;
}

/**
 * Stand-ins for the official images under their own names, so the project's Dockerfile builds unchanged with
 * --pull=never: Debian bookworm from debootstrap, and on it the Node 24 binary the project already installs
 * with the machine's npm, laid out as the official image has them. The stand-in also carries this machine's
 * CA bundle, without which npm cannot reach the registry from here (the official image reaches it directly).
 */
export async function buildBaseImages(podman: Podman, nodeBinary: string, workDir: string): Promise<void> {
  const tar = await baseTar();
  await podman.must([
    'import',
    '--change',
    'CMD ["bash"]',
    '--change',
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    tar,
    BASE,
  ]);
  const context = join(workDir, 'node-base');
  mkdirSync(context, { recursive: true });
  cpSync(nodeBinary, join(context, 'node'));
  const npmCli = realpathSync((await must('sh', ['-c', 'command -v npm'])).trim());
  cpSync(dirname(dirname(npmCli)), join(context, 'npm'), { recursive: true });
  cpSync('/etc/ssl/certs/ca-certificates.crt', join(context, 'ca-certificates.crt'));
  writeFileSync(
    join(context, 'Containerfile'),
    [
      `FROM ${BASE}`,
      'COPY node /usr/local/bin/node',
      'COPY npm /usr/local/lib/node_modules/npm',
      'COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt',
      'RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx',
      'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt',
      'CMD ["node"]',
      '',
    ].join('\n'),
  );
  await podman.must(['build', '--pull=never', '--quiet', '--tag', NODE_BASE, context]);
}
