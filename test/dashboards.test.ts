import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import type { FakeUpstream } from '../src/providers/fake-upstream.ts';
import { startFakeOpenAI } from '../src/providers/openai/fake-openai.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';

/** The Grafana dashboard and the Prometheus alert rules in deploy/ name only metrics a running gateway exposes. */
const DASHBOARD = new URL('../deploy/grafana/tollgate.json', import.meta.url);
const ALERTS = new URL('../deploy/prometheus/alerts.yaml', import.meta.url);
const METRIC = /\b(?:tollgate|process|nodejs)_[a-z0-9_]+/g;

interface Panel {
  title: string;
  targets?: { expr: string }[];
}

const dashboardExprs = (): { where: string; expr: string }[] => {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] };
  return dashboard.panels.flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({ where: `panel "${panel.title}"`, expr: target.expr })),
  );
};

const alertExprs = (): { where: string; expr: string }[] => {
  const file = parse(readFileSync(ALERTS, 'utf8')) as {
    groups: { rules: { alert: string; expr: string }[] }[];
  };
  return file.groups.flatMap((group) =>
    group.rules.map((rule) => ({ where: `alert ${rule.alert}`, expr: rule.expr })),
  );
};

/** Every series name /metrics can show: each metric's TYPE line, with a histogram's _bucket, _sum and _count. */
function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = match;
    names.add(name!);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name! + suffix);
  }
  return names;
}

describe('dashboards and alert rules', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let upstream: FakeUpstream;
  let names: Set<string>;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    upstream = await startFakeOpenAI();
    server = await startTestServer({
      backend: opened,
      yaml: {
        providers: [{ id: 'up', type: 'openai', base_url: upstream.url }],
        models: { 'model-b': { deployments: [{ provider: 'up', model: 'up-b' }] } },
      },
      // The request events' metrics exist once the stream is configured: the dashboard shows them.
      extra: { telemetryEnv: { TOLLGATE_REQUEST_EVENTS: 'http://127.0.0.1:9/events' } },
    });
    const { key } = await server.registerOn('pro');
    const answer = await server.call('POST', '/v1/chat/completions', {
      key,
      body: { model: 'model-b', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(answer.status, 200);
    const metrics = await fetch(`${server.url}/metrics`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    assert.equal(metrics.status, 200);
    names = exposedNames(await metrics.text());
  });
  after(async () => {
    await server?.close();
    await upstream?.close();
    await opened?.cleanup();
  });

  for (const [what, exprsOf] of [
    ['the Grafana dashboard', dashboardExprs],
    ['the Prometheus alert rules', alertExprs],
  ] as const) {
    it(`${what}: every metric it names is in /metrics`, () => {
      const exprs = exprsOf();
      assert.ok(exprs.length >= 8, `${what} has its queries`);
      const missing: string[] = [];
      for (const { where, expr } of exprs) {
        const used = expr.match(METRIC) ?? [];
        assert.ok(used.length > 0, `${where} names a metric`);
        for (const name of used) if (!names.has(name)) missing.push(`${where}: ${name}`);
      }
      assert.deepEqual(missing, []);
    });
  }

  it('the check would catch a metric that does not exist', () => {
    assert.equal(names.has('tollgate_chat_requests_total'), true);
    assert.equal(names.has('tollgate_chat_request_duration_seconds_bucket'), true);
    assert.equal(names.has('tollgate_no_such_metric_total'), false);
  });

  it('the dashboard covers what operators look for', () => {
    const all = dashboardExprs()
      .map(({ expr }) => expr)
      .join('\n');
    for (const name of [
      'tollgate_rejected_requests_total',
      'tollgate_deployment_time_to_first_token_seconds_bucket',
      'tollgate_revenue_usd_total',
      'tollgate_circuit_state',
      'tollgate_backend_up',
      'tollgate_hold_backend_info',
      'tollgate_webhook_backlog',
    ])
      assert.ok(all.includes(name), name);
  });
});
