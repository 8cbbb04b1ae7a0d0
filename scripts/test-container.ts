// `npm run test:container`: Tollgate installed as production software, tried here from nothing.
//   1. the npm package: packed, installed globally, started on Node 24 and on Node 22;
//   2. the systemd unit (systemd-analyze verify), the Kubernetes manifests (their schemas), compose.yaml;
//   3. the image of the project's own Dockerfile, built with podman on local stand-ins for the official bases
//      (no registry is reachable here), run, used, and stopped with SIGTERM;
//   4. compose.yaml's two instances on PostgreSQL and Redis.
// Installs podman, runc, debootstrap and systemd with apt-get where missing (run as root, as CI is). Everything
// it starts or builds is removed at the end; only the debootstrap root is cached, in /var/tmp.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Checks } from '../test/deploy/checks.ts';
import { containerChecks } from '../test/deploy/container-checks.ts';
import { instancesChecks } from '../test/deploy/instances-checks.ts';
import { manifestChecks } from '../test/deploy/manifest-checks.ts';
import { packageChecks } from '../test/deploy/package-checks.ts';
import { preparePodman } from '../test/deploy/podman.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'tollgate-deploy-'));
const checks = new Checks();
const started = performance.now();
let podman: Awaited<ReturnType<typeof preparePodman>> | undefined;
try {
  const prefix = await packageChecks(checks, root, work);
  const compose = await manifestChecks(checks, root, work, prefix);
  checks.section('podman');
  await checks.check('podman, runc and debootstrap are ready', async () => {
    podman = await preparePodman();
  });
  if (podman && (await containerChecks(checks, podman, root, work)))
    await instancesChecks(checks, podman, work, compose);
} catch (error) {
  checks.section('unexpected');
  await checks.check('the run itself', () =>
    Promise.reject(error instanceof Error ? error : new Error(String(error))),
  );
} finally {
  await podman?.cleanup();
  rmSync(work, { recursive: true, force: true });
}
checks.fact(`whole run: ${((performance.now() - started) / 1000).toFixed(0)} s`);
checks.close();
process.exit(checks.failed === 0 ? 0 : 1);
