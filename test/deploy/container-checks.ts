import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Checks } from './checks.ts';
import { chat, dashboard, register, stream, waitHealthy } from './gateway-http.ts';
import { buildBaseImages, type Podman } from './podman.ts';

export const IMAGE = 'localhost/tollgate:test';
export const ADMIN_KEY = 'tg-admin-container-test-0123456789abcdef';
const PORT = 18_951;

/** The exit code of a stopped container. */
export async function exitCode(podman: Podman, name: string): Promise<number> {
  return Number((await podman.must(['inspect', '--format', '{{.State.ExitCode}}', name])).trim());
}

/** Builds the image from the project's unchanged Dockerfile on stand-in bases, runs it and stops it. */
export async function containerChecks(
  checks: Checks,
  podman: Podman,
  root: string,
  work: string,
): Promise<boolean> {
  checks.section('the container image');
  await checks.check(
    'stand-ins for the official Debian and Node 24 images',
    () => buildBaseImages(podman, join(root, 'node_modules', 'node', 'bin', 'node'), work),
    { needed: true },
  );
  const built = await checks.check(
    'the Dockerfile builds unchanged with --pull=never',
    async () => {
      const started = performance.now();
      await podman.must(['build', '--pull=never', '--format', 'docker', '--tag', IMAGE, root]);
      checks.fact(
        `image build (from nothing cached): ${((performance.now() - started) / 1000).toFixed(0)} s`,
      );
      const size = Number((await podman.must(['image', 'inspect', '--format', '{{.Size}}', IMAGE])).trim());
      checks.fact(
        `image size: ${(size / 1e6).toFixed(0)} MB (the stand-in Node 24 base alone is ${await baseSize(podman)} MB)`,
      );
    },
    { needed: true },
  );
  await checks.check('the image runs as a non-root user with a volume, a health check and tini', async () => {
    const [image] = JSON.parse(await podman.must(['image', 'inspect', IMAGE]));
    assert.equal(image.Config.User, '10001:10001');
    assert.ok(image.Config.Volumes['/var/lib/tollgate'], JSON.stringify(image.Config.Volumes));
    assert.deepEqual(image.Config.Entrypoint, ['/usr/bin/tini', '--']);
    // podman reports the Docker-format health check beside the config, Docker inside it.
    const healthcheck = image.HealthCheck ?? image.Healthcheck ?? image.Config.Healthcheck;
    assert.match(JSON.stringify(healthcheck?.Test), /\/health/);
  });
  const yaml = join(work, 'tollgate.yaml');
  writeFileSync(yaml, 'simulator:\n  chunk_interval_ms: 40\n');
  const base = `http://127.0.0.1:${PORT}`;
  let key = '';
  await checks.check(
    'it starts with a mounted YAML and environment settings, and /health answers',
    async () => {
      const started = performance.now();
      await podman.must([
        'run',
        '--detach',
        '--name',
        'tollgate-single',
        '--publish',
        `127.0.0.1:${PORT}:8080`,
        '--env',
        `TOLLGATE_ADMIN_KEY=${ADMIN_KEY}`,
        '--env',
        'TOLLGATE_CONFIG=/etc/tollgate/tollgate.yaml',
        '--volume',
        `${yaml}:/etc/tollgate/tollgate.yaml:ro`,
        '--volume',
        'tollgate-data:/var/lib/tollgate',
        IMAGE,
      ]);
      await waitHealthy(base, 60_000);
      checks.fact(`start to a healthy /health: ${((performance.now() - started) / 1000).toFixed(1)} s`);
      const healthcheck = await podman.run(['healthcheck', 'run', 'tollgate-single']);
      assert.equal(
        healthcheck.code,
        0,
        `the image's HEALTHCHECK: ${healthcheck.stdout}${healthcheck.stderr}`,
      );
      assert.equal((await podman.must(['exec', 'tollgate-single', 'id', '-u'])).trim(), '10001');
    },
    { needed: true },
  );
  await checks.check('it serves the dashboard, registers, completes a chat and a stream', async () => {
    await dashboard(base);
    key = (await register(base, 'container@example.com')).key;
    assert.equal(await chat(base, key), 200);
    const streamed = await stream(base, key);
    assert.ok(streamed.chunks > 1 && streamed.done, JSON.stringify(streamed));
  });
  await checks.check('tollgate backup copies the live store inside the container', async () => {
    const out = await podman.must([
      'exec',
      'tollgate-single',
      'tollgate',
      'backup',
      '/var/lib/tollgate/backup.db',
    ]);
    assert.match(out, /^backed up \/var\/lib\/tollgate\/tollgate\.db to \/var\/lib\/tollgate\/backup\.db/);
  });
  await checks.check('SIGTERM (podman stop) drains a stream in flight, then exits 0', async () => {
    const inFlight = stream(base, key);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const started = performance.now();
    await podman.must(['stop', '--time', '30', 'tollgate-single']);
    const stopSeconds = (performance.now() - started) / 1000;
    const streamed = await inFlight;
    assert.ok(streamed.done, `the stream in flight ended without [DONE]: ${JSON.stringify(streamed)}`);
    assert.equal(await exitCode(podman, 'tollgate-single'), 0);
    assert.ok(stopSeconds < 25, `stopped in ${stopSeconds} s: killed at the timeout rather than drained`);
    checks.fact(`stop with a stream in flight: ${stopSeconds.toFixed(1)} s, exit 0`);
  });
  return built;
}

async function baseSize(podman: Podman): Promise<string> {
  const size = await podman.must([
    'image',
    'inspect',
    '--format',
    '{{.Size}}',
    'docker.io/library/node:24-bookworm-slim',
  ]);
  return (Number(size.trim()) / 1e6).toFixed(0);
}
