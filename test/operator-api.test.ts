import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { until } from './helpers/until.ts';
import { startReceiver } from './helpers/receiver.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';

const PASSWORD = 'correct horse battery';
const DAY_MS = 86_400_000;

interface Browser {
  cookie: string;
  csrf: string;
}

async function signIn(server: TestServer, email: string): Promise<Browser> {
  const response = await server.call('POST', '/api/auth/login', { body: { email, password: PASSWORD } });
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return {
    cookie: (response.headers.get('set-cookie') ?? '').split(';')[0] ?? '',
    csrf: response.body.csrf_token,
  };
}

const as = (browser: Browser, csrf = true): Record<string, string> => ({
  cookie: browser.cookie,
  ...(csrf ? { 'x-csrf-token': browser.csrf } : {}),
});

/** A route's path with its parameters filled in. */
const pathOf = (url: string): string => url.replace(/:(\w+)/g, (_, name: string) => `${name}_x`);

for (const backend of BACKENDS) {
  const skip = await backend.unavailable();
  describe(`the operator API on ${backend.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let server: TestServer;
    let operator: { accountId: string; key: string; email: string };
    before(async () => {
      opened = await backend.open();
      server = await startTestServer({ backend: opened, extra: { statusRefreshMs: 300 } });
      const email = `op-${Date.now()}@example.com`;
      operator = { ...(await server.register(email)), email };
      const granted = await server.call('POST', '/api/admin/operators', {
        key: ADMIN_KEY,
        body: { email: email.toUpperCase() },
      });
      assert.equal(granted.status, 200, JSON.stringify(granted.body));
      assert.equal(granted.body.role, 'operator');
    });
    after(async () => {
      await server?.close();
      await opened?.cleanup();
    });

    it('everyone but an operator gets 403 on every operator route, and no credentials get 401', async () => {
      const routes = server.app.operatorRoutes.filter((route) => route.method !== 'HEAD');
      assert.ok(routes.length >= 25, `only ${routes.length} operator routes`);
      const user = await server.register();
      const browser = await signIn(
        server,
        (await server.call('GET', '/api/account', { key: user.key })).body.email,
      );
      for (const route of routes) {
        const path = pathOf(route.url);
        const withKey = await server.call(route.method, path, {
          key: user.key,
          body: route.method === 'GET' ? undefined : {},
        });
        assert.equal(withKey.status, 403, `${route.method} ${route.url} with a user key`);
        assert.equal(withKey.body.error.code, 'forbidden');
        const withSession = await server.call(route.method, path, {
          headers: as(browser),
          body: route.method === 'GET' ? undefined : {},
        });
        assert.equal(withSession.status, 403, `${route.method} ${route.url} with a user session`);
        const anonymous = await server.call(route.method, path, {
          body: route.method === 'GET' ? undefined : {},
        });
        assert.equal(anonymous.status, 401, `${route.method} ${route.url} without credentials`);
      }
    });

    it('an operator is admitted by its key and by its session (with the CSRF header on writes)', async () => {
      const byKey = await server.call('GET', '/api/admin/accounts?limit=5', { key: operator.key });
      assert.equal(byKey.status, 200);
      const browser = await signIn(server, operator.email);
      const session = await server.call('GET', '/api/auth/session', { headers: as(browser, false) });
      assert.equal(session.body.operator, true);
      const targetEmail = `resend-${Date.now()}@example.com`;
      const target = await server.register(targetEmail);
      const noCsrf = await server.call(
        'POST',
        `/api/admin/accounts/${target.accountId}/resend-verification`,
        {
          headers: as(browser, false),
        },
      );
      assert.equal(noCsrf.status, 403);
      const withCsrf = await server.call(
        'POST',
        `/api/admin/accounts/${target.accountId}/resend-verification`,
        {
          headers: as(browser),
        },
      );
      assert.equal(withCsrf.status, 202);
      assert.deepEqual(withCsrf.body, { sent: true });
      await until(
        async () =>
          server.mails.some((m) => m.to === targetEmail && /\/verify-email\?token=ev-/.test(m.text)),
        'the resent mail',
      );
      await server.services.store.accounts.markVerified(target.accountId);
      const again = await server.call('POST', `/api/admin/accounts/${target.accountId}/resend-verification`, {
        key: operator.key,
      });
      assert.equal(again.status, 409);
      const user = await server.register();
      const plain = await signIn(
        server,
        (await server.call('GET', '/api/account', { key: user.key })).body.email,
      );
      assert.equal(
        (await server.call('GET', '/api/auth/session', { headers: as(plain, false) })).body.operator,
        false,
      );
    });

    it('a revoked operator’s key is refused at once; the admin key lists operators', async () => {
      const email = `op2-${Date.now()}@example.com`;
      const second = await server.register(email);
      await server.call('POST', '/api/admin/operators', { key: operator.key, body: { email } });
      assert.equal((await server.call('GET', '/api/admin/audit', { key: second.key })).status, 200);
      const listed = await server.call('GET', '/api/admin/operators', { key: ADMIN_KEY });
      assert.ok(listed.body.data.some((a: any) => a.id === second.accountId));
      const revoked = await server.call('DELETE', `/api/admin/operators/${second.accountId}`, {
        key: operator.key,
      });
      assert.equal(revoked.body.role, 'user');
      assert.equal((await server.call('GET', '/api/admin/audit', { key: second.key })).status, 403);
      const unknown = await server.call('POST', '/api/admin/operators', {
        key: ADMIN_KEY,
        body: { email: 'nobody@example.com' },
      });
      assert.equal(unknown.status, 404);
    });

    it('operator actions are audited: who, what, on which account, from which address; suspension bites', async () => {
      const target = await server.register();
      const suspended = await server.call('POST', `/api/admin/accounts/${target.accountId}/suspend`, {
        key: operator.key,
        body: { reason: 'chargeback' },
      });
      assert.equal(suspended.status, 200);
      assert.equal(suspended.body.status, 'suspended');
      assert.equal(suspended.body.suspended_reason, 'chargeback');
      const refused = await server.call('POST', '/v1/chat/completions', {
        key: target.key,
        body: { model: 'model-b', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error.code, 'forbidden');
      const grant = await server.call('POST', `/api/admin/accounts/${target.accountId}/credits`, {
        key: ADMIN_KEY,
        body: { amount_usd: 5 },
      });
      assert.equal(grant.status, 201);
      await server.call('POST', `/api/admin/accounts/${target.accountId}/unsuspend`, { key: operator.key });
      const audit = await server.call('GET', `/api/admin/audit?account_id=${target.accountId}`, {
        key: operator.key,
      });
      assert.equal(audit.status, 200);
      assert.equal(audit.body.total, 3);
      const [unsuspend, credit, suspend] = audit.body.data;
      assert.deepEqual(
        [suspend.action, suspend.actor, suspend.account_id, suspend.details.reason, suspend.ip],
        ['account.suspend', operator.email, target.accountId, 'chargeback', '127.0.0.1'],
      );
      assert.deepEqual(
        [credit.action, credit.actor, credit.details.amount_usd],
        ['account.grant_credit', 'admin-key', 5],
      );
      assert.equal(unsuspend.action, 'account.unsuspend');
      assert.ok(Date.parse(suspend.at) <= Date.parse(unsuspend.at));
      // Refused actions leave no row; reads leave none either.
      await server.call('POST', '/api/admin/accounts/acct_nope/suspend', { key: operator.key });
      const all = await server.call('GET', '/api/admin/audit?limit=500', { key: operator.key });
      assert.ok(!all.body.data.some((row: any) => row.account_id === 'acct_nope'));
      assert.ok(!all.body.data.some((row: any) => row.action.startsWith('GET')));
      // The log cannot be changed through the API: no route writes to it.
      assert.equal((await server.call('DELETE', `/api/admin/audit`, { key: ADMIN_KEY })).status, 405);
    });

    it('an account’s page shows its balance, grants, keys, usage, orders and deliveries; keys can be revoked', async () => {
      const target = await server.register();
      const chat = await server.call('POST', '/v1/chat/completions', {
        key: target.key,
        body: { model: 'model-b', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(chat.status, 200);
      await server.services.settlements.flush();
      const detail = await server.call('GET', `/api/admin/accounts/${target.accountId}/detail`, {
        key: operator.key,
      });
      assert.equal(detail.status, 200);
      assert.equal(detail.body.account.id, target.accountId);
      assert.ok(detail.body.account.balance_usd > 0.99 && detail.body.account.balance_usd < 1);
      assert.equal(detail.body.credits[0].kind, 'trial');
      assert.equal(detail.body.keys[0].id, target.keyId);
      assert.equal(detail.body.usage.last_30_days[0].requests, 1);
      assert.deepEqual([detail.body.orders, detail.body.webhook_deliveries], [[], []]);
      const keys = await server.call('GET', `/api/admin/accounts/${target.accountId}/keys`, {
        key: operator.key,
      });
      assert.deepEqual(
        keys.body.data.map((k: any) => k.status),
        ['active'],
      );
      const revoked = await server.call(
        'DELETE',
        `/api/admin/accounts/${target.accountId}/keys/${target.keyId}`,
        {
          key: operator.key,
        },
      );
      assert.equal(revoked.body.status, 'revoked');
      const after = await server.call('POST', '/v1/chat/completions', {
        key: target.key,
        body: { model: 'model-b', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(after.status, 403);
      assert.equal(
        (await server.call('GET', '/api/admin/accounts/acct_nope/detail', { key: operator.key })).status,
        404,
      );
    });

    it('statistics by day, deployments with their circuits and latencies, the webhook backlog, the usage export', async () => {
      const target = await server.register();
      for (const stream of [false, true]) {
        const response = await server.call('POST', '/v1/chat/completions', {
          key: target.key,
          body: { model: 'model-c', stream, messages: [{ role: 'user', content: 'hi' }] },
        });
        assert.equal(response.status, 200);
      }
      await server.services.settlements.flush();
      const stats = await server.call('GET', '/api/admin/stats/daily?days=7', { key: operator.key });
      assert.equal(stats.body.data.length, 7);
      const today = stats.body.data[6];
      assert.equal(today.day, new Date().toISOString().slice(0, 10));
      assert.ok(today.requests >= 2 && today.new_accounts >= 1 && today.spend_usd > 0);
      assert.ok(stats.body.by_model.some((r: any) => r.model === 'model-c' && r.requests >= 2));
      assert.ok(stats.body.by_plan.some((r: any) => r.plan === 'free_trial'));
      const deployments = await server.call('GET', '/api/admin/deployments', { key: operator.key });
      const modelC = deployments.body.data.find((d: any) => d.model === 'model-c');
      assert.equal(modelC.circuit, 'closed');
      assert.ok(modelC.requests_5m >= 2);
      assert.equal(modelC.error_rate_5m, 0);
      assert.ok(modelC.latency_p50_ms > 0 && modelC.ttft_p50_ms > 0);
      const webhooks = await server.call('GET', '/api/admin/webhooks', { key: operator.key });
      assert.deepEqual(Object.keys(webhooks.body).sort(), ['backlog', 'failing_endpoints']);
      assert.equal(typeof webhooks.body.backlog.pending, 'number');
      assert.equal(
        (await server.call('POST', '/api/admin/webhooks/deliveries/wd_nope/redeliver', { key: operator.key }))
          .status,
        404,
      );
      const day = new Date().toISOString().slice(0, 10);
      const csv = await fetch(
        `${server.url}/api/admin/usage/export?from=${day}&to=${day}&account_id=${target.accountId}`,
        {
          headers: { authorization: `Bearer ${operator.key}` },
        },
      );
      assert.equal(csv.status, 200);
      const lines = (await csv.text()).trim().split('\n');
      assert.equal(
        lines[0],
        'request_id,account_id,key_id,model,status,prompt_tokens,completion_tokens,total_tokens,cost_usd,created_at,input_tokens,cached_input_tokens,cache_write_tokens,cache_write_1h_tokens,reasoning_tokens',
      );
      assert.equal(lines.length, 3);
      assert.ok(lines.slice(1).every((line) => line.includes(target.accountId) && !line.includes('hi,')));
      const jsonl = await server.call(
        'GET',
        `/api/admin/usage/export?from=${day}&to=${day}&format=jsonl&account_id=${target.accountId}`,
        {
          key: operator.key,
        },
      );
      const records = String(jsonl.body)
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      assert.deepEqual(
        records.map((r) => r.model),
        ['model-c', 'model-c'],
      );
      assert.ok(records[0].created_at <= records[1].created_at);
      const bad = await server.call('GET', '/api/admin/usage/export?from=yesterday&to=2026-01-01', {
        key: operator.key,
      });
      assert.equal(bad.status, 400);
    });

    it('the webhooks page lists an endpoint that keeps failing; redelivery sends the event again', async () => {
      const receiver = await startReceiver();
      try {
        receiver.answer({ status: 500 });
        const { key, accountId } = await server.register();
        await server.call('PUT', '/api/webhooks/endpoint', { key, body: { url: receiver.url } });
        assert.equal((await server.call('POST', '/api/webhooks/test', { key })).status, 202);
        await receiver.waitFor(1);
        let failing: any;
        await until(async () => {
          const page = await server.call('GET', '/api/admin/webhooks', { key: operator.key });
          failing = page.body.failing_endpoints.find((e: any) => e.account_id === accountId);
          return failing !== undefined;
        }, 'the failing endpoint');
        assert.deepEqual(
          [failing.url, failing.consecutive_failures, failing.last_error],
          [receiver.url, 1, 'status 500'],
        );
        assert.ok(failing.last_delivery_id && failing.last_attempt_at);
        const redelivered = await server.call(
          'POST',
          `/api/admin/webhooks/deliveries/${failing.last_delivery_id}/redeliver`,
          {
            key: operator.key,
          },
        );
        assert.equal(redelivered.status, 202);
        await receiver.waitFor(2);
        await until(async () => {
          const page = await server.call('GET', '/api/admin/webhooks', { key: operator.key });
          return !page.body.failing_endpoints.some((e: any) => e.account_id === accountId);
        }, 'the endpoint to recover');
        const audit = await server.call('GET', `/api/admin/audit?account_id=${accountId}`, {
          key: operator.key,
        });
        assert.equal(audit.body.data[0].action, 'webhook.redeliver');
      } finally {
        await receiver.close();
      }
    });

    it('a breaking change is refused at 89 days and accepted at 90, and mails every verified account once', async () => {
      const verified = await server.register();
      await server.services.store.accounts.markVerified(verified.accountId);
      const email = (await server.call('GET', '/api/account', { key: verified.key })).body.email;
      const notice = {
        title: 'model-a moves to v2',
        body: 'Answers change shape.',
        severity: 'major',
        models: ['model-a'],
        breaking: true,
      };
      const early = await server.call('POST', '/api/admin/announcements', {
        key: operator.key,
        body: { ...notice, effective_at: new Date(Date.now() + 89 * DAY_MS).toISOString() },
      });
      assert.equal(early.status, 400);
      assert.equal(early.body.error.code, 'invalid_request');
      assert.equal(early.body.error.param, 'effective_at');
      const effective = new Date(Date.now() + 90 * DAY_MS).toISOString();
      const posted = await server.call('POST', '/api/admin/announcements', {
        key: operator.key,
        body: { ...notice, effective_at: effective },
      });
      assert.equal(posted.status, 201, JSON.stringify(posted.body));
      assert.equal(posted.body.breaking, true);
      assert.equal(posted.body.created_by, operator.email);
      await until(
        async () => server.mails.some((m) => m.to === email && m.subject.includes('model-a moves to v2')),
        'the notice mail',
      );
      const verifiedCount = Number(
        (
          await server.services.store.db.get<{ n: number }>(
            'SELECT COUNT(*) AS n FROM accounts WHERE email_verified = 1',
          )
        )?.n,
      );
      await until(
        async () =>
          server.mails.filter((m) => m.subject.includes('model-a moves to v2')).length === verifiedCount,
        'every mail',
      );
      const unknownModel = await server.call('POST', '/api/admin/announcements', {
        key: operator.key,
        body: { ...notice, models: ['model-z'], effective_at: effective },
      });
      assert.equal(unknownModel.body.error.param, 'models');
      const edited = await server.call('PATCH', `/api/admin/announcements/${posted.body.id}`, {
        key: operator.key,
        body: { body: 'Answers change shape; see the guide.' },
      });
      assert.equal(edited.status, 200);
      assert.equal(edited.body.effective_at, posted.body.effective_at);
      const status = await server.call('GET', '/status.json');
      const upcoming = status.body.breaking_changes.find((a: any) => a.id === posted.body.id);
      assert.ok(upcoming, 'the notice is on the status page');
      const ended = await server.call('POST', `/api/admin/announcements/${posted.body.id}/end`, {
        key: operator.key,
      });
      assert.ok(ended.body.ends_at);
      const audit = await server.call('GET', '/api/admin/audit?limit=50', { key: operator.key });
      const actions = audit.body.data.map((row: any) => row.action);
      for (const action of ['announcement.create', 'announcement.update', 'announcement.end'])
        assert.ok(actions.includes(action), action);
      assert.equal(
        server.mails.filter((m) => m.subject.includes('model-a moves to v2')).length,
        verifiedCount,
      );
    });
  });
}
