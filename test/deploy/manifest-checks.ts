import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { parse, parseAllDocuments } from 'yaml';
import type { Checks } from './checks.ts';
import { aptInstall, installed, must } from './run.ts';

const MODELS = { Secret, ConfigMap, Service, Deployment, PodDisruptionBudget } as const;
/** The drain after SIGTERM (main.ts forces an exit after 30 s). */
const DRAIN_S = 30;

/** Each document checked against the Kubernetes OpenAPI schema of its kind, then what the schema cannot see. */
function checkKubernetes(root: string): void {
  const docs = parseAllDocuments(readFileSync(join(root, 'deploy/kubernetes/tollgate.yaml'), 'utf8')).map(
    (doc) => doc.toJS() as { kind: keyof typeof MODELS; metadata: { name: string }; spec: any },
  );
  const byKind = new Map(docs.map((doc) => [`${doc.kind}/${doc.metadata.name}`, doc]));
  for (const doc of docs) {
    const Model = MODELS[doc.kind];
    assert.ok(Model, `no schema for kind ${doc.kind}`);
    new Model(doc).validate();
  }
  const deployment = docs.find((doc) => doc.kind === 'Deployment');
  assert.ok(deployment && docs.some((doc) => doc.kind === 'PodDisruptionBudget'), 'a Deployment and a PDB');
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0];
  assert.equal(container.readinessProbe.httpGet.path, '/health/ready');
  assert.equal(container.livenessProbe.httpGet.path, '/health');
  const preStop = Number(container.lifecycle.preStop.exec.command.at(-1));
  assert.ok(
    pod.terminationGracePeriodSeconds >= preStop + DRAIN_S,
    'the grace period covers preStop and the drain',
  );
  assert.equal(pod.securityContext.runAsNonRoot, true);
  for (const from of container.envFrom)
    assert.ok(
      byKind.has(from.secretRef ? `Secret/${from.secretRef.name}` : `ConfigMap/${from.configMapRef.name}`),
      `envFrom ${JSON.stringify(from)} names a manifest of this file`,
    );
  for (const volume of pod.volumes.filter((v: any) => v.configMap))
    assert.ok(byKind.has(`ConfigMap/${volume.configMap.name}`), `volume ${volume.name}'s ConfigMap`);
  const labels = deployment.spec.template.metadata.labels;
  for (const doc of docs.filter((d) => d.kind === 'PodDisruptionBudget' || d.kind === 'Service')) {
    const selector = doc.kind === 'Service' ? doc.spec.selector : doc.spec.selector.matchLabels;
    for (const [label, value] of Object.entries(selector))
      assert.equal(labels[label], value, `${doc.kind} selects the pods`);
  }
}

/** What the compose file gives each Tollgate instance: the settings the two-instance check runs with. */
export interface ComposeInstance {
  environment: Record<string, string>;
}

function checkCompose(root: string): ComposeInstance {
  const compose = parse(readFileSync(join(root, 'compose.yaml'), 'utf8'), { merge: true });
  const instances = ['tollgate-1', 'tollgate-2'].map((name) => compose.services[name]);
  for (const instance of instances) {
    assert.ok(instance, 'services tollgate-1 and tollgate-2');
    assert.equal(instance.build, '.', 'built from the Dockerfile');
    assert.match(instance.environment.DATABASE_URL, /^postgres:\/\/[^@]+@postgres:5432\//);
    assert.match(instance.environment.REDIS_URL, /^redis:\/\/redis:6379/);
    assert.ok(parseInt(instance.stop_grace_period, 10) > DRAIN_S, 'stop_grace_period above the drain');
    assert.deepEqual(instance.depends_on.postgres, { condition: 'service_healthy' });
  }
  const proxyAddress = compose.services.proxy.networks.default.ipv4_address;
  assert.equal(instances[0].environment.TOLLGATE_TRUST_PROXY, proxyAddress, 'the proxy is the one trusted');
  for (const upstream of ['tollgate-1:8080', 'tollgate-2:8080'])
    assert.ok(compose.services.proxy.command.includes(upstream));
  return { environment: instances[0].environment };
}

/** The systemd unit passes `systemd-analyze verify`, its ExecStart pointed at the package installed here. */
async function checkSystemdUnit(root: string, work: string, prefix: string): Promise<void> {
  if (!installed('systemd-analyze')) await aptInstall(['systemd']);
  const unit = readFileSync(join(root, 'deploy/systemd/tollgate.service'), 'utf8');
  const start = /^ExecStart=\/usr\/local\/bin\/tollgate start$/m;
  assert.match(unit, start);
  for (const setting of [
    /^DynamicUser=yes$/m,
    /^ProtectSystem=strict$/m,
    /^StateDirectory=tollgate$/m,
    /^LimitNOFILE=\d+$/m,
  ])
    assert.match(unit, setting);
  const stop = Number(/^TimeoutStopSec=(\d+)s?$/m.exec(unit)?.[1]);
  assert.ok(stop > DRAIN_S, `TimeoutStopSec (${stop}) above the drain`);
  const file = join(work, 'tollgate.service');
  writeFileSync(file, unit.replace(start, `ExecStart=${join(prefix, 'bin', 'tollgate')} start`));
  try {
    const verify = await must('systemd-analyze', ['verify', file]);
    assert.equal(verify.trim(), '');
  } finally {
    rmSync(file, { force: true });
  }
}

export async function manifestChecks(
  checks: Checks,
  root: string,
  work: string,
  prefix: string | undefined,
): Promise<ComposeInstance | undefined> {
  checks.section('service unit, Kubernetes manifests, compose file');
  await checks.check('the systemd unit passes systemd-analyze verify', async () => {
    assert.ok(prefix, 'the package was not installed');
    await checkSystemdUnit(root, work, prefix);
  });
  await checks.check('the Kubernetes manifests validate against the Kubernetes schemas', async () =>
    checkKubernetes(root),
  );
  let compose: ComposeInstance | undefined;
  await checks.check(
    'compose.yaml parses and gives both instances PostgreSQL, Redis and the proxy',
    async () => {
      compose = checkCompose(root);
    },
  );
  return compose;
}
