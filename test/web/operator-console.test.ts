// The operator console driven in a real browser (same setup as the dashboard suite): the admin key makes the
// first operator, who finds an account, grants it credit, suspends it and posts a breaking-change notice;
// an account holder gets 403 from every operator route and never sees (or downloads) the console.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI, { APIError } from 'openai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { BACKENDS, type OpenedBackend } from '../helpers/backends.ts';
import {
  axeFindings,
  browserMissing,
  desktopContext,
  heading,
  launchBrowser,
  SCREENS,
  sidewaysOverflow,
  signIn,
} from '../helpers/browser.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';

const PASSWORD = 'correct horse battery';
const DAY_MS = 86_400_000;

const missing = browserMissing();
const sqlite = BACKENDS.find((backend) => backend.name === 'sqlite');

const OPERATOR_PAGES = [
  { link: 'Accounts', path: '/operator/accounts', heading: 'Accounts' },
  { link: 'Statistics', path: '/operator/statistics', heading: 'Statistics' },
  { link: 'Deployments', path: '/operator/deployments', heading: 'Deployments' },
  { link: 'Webhooks', path: '/operator/webhooks', heading: 'Webhooks' },
  { link: 'Announcements', path: '/operator/announcements', heading: 'Announcements' },
  { link: 'Audit log', path: '/operator/audit', heading: 'Audit log' },
] as const;

/** Every operator route with a request an operator could make (ids need not exist: 403 comes first). */
const OPERATOR_ROUTES: [method: string, path: string, body?: unknown][] = [
  ['GET', '/api/admin/accounts'],
  ['GET', '/api/admin/accounts/acct_x/detail'],
  ['GET', '/api/admin/accounts/acct_x/keys'],
  ['DELETE', '/api/admin/accounts/acct_x/keys/key_x'],
  ['POST', '/api/admin/accounts/acct_x/suspend', { reason: 'x' }],
  ['POST', '/api/admin/accounts/acct_x/unsuspend', {}],
  ['PUT', '/api/admin/accounts/acct_x/plan', { plan: 'pro' }],
  ['POST', '/api/admin/accounts/acct_x/credits', { amount_usd: 1 }],
  ['PUT', '/api/admin/accounts/acct_x/limits', { rpm: 1 }],
  ['POST', '/api/admin/accounts/acct_x/resend-verification', {}],
  ['GET', '/api/admin/operators'],
  ['POST', '/api/admin/operators', { email: 'someone@example.com' }],
  ['DELETE', '/api/admin/operators/acct_x'],
  ['GET', '/api/admin/audit'],
  ['GET', '/api/stats/segmented'],
  ['GET', '/api/admin/stats/daily?days=30'],
  ['GET', '/api/admin/deployments'],
  ['GET', '/api/admin/webhooks'],
  ['POST', '/api/admin/webhooks/deliveries/dlv_x/redeliver', {}],
  ['GET', '/api/admin/announcements'],
  ['POST', '/api/admin/announcements', { title: 't', body: 'b', severity: 'info' }],
  ['PATCH', '/api/admin/announcements/ann_x', { title: 't' }],
  ['POST', '/api/admin/announcements/ann_x/end', {}],
  ['GET', '/api/admin/usage/export?from=2026-01-01&to=2026-01-02&format=csv'],
];

/** A `datetime-local` value in UTC: the UTC day `days` days from today, at `time`. */
const localInput = (days: number, time: string): string =>
  `${new Date(Date.now() + days * DAY_MS).toISOString().slice(0, 10)}T${time}`;

describe(
  'the operator console in a real browser',
  { skip: missing ?? (sqlite ? false : 'sqlite deselected') },
  () => {
    let opened: OpenedBackend;
    let server: TestServer;
    let receiver: Receiver;
    let browser: Browser;
    let operator: BrowserContext;
    let page: Page;
    const stamp = Date.now();
    const operatorEmail = `ops-${stamp}@example.com`;
    const holderEmail = `holder-${stamp}@example.com`;
    let holder: { accountId: string; key: string };
    const notice = `Model-a retires ${stamp}`;

    const go = async (link: string, title = link): Promise<void> => {
      await page
        .getByRole('navigation', { name: 'Operator console' })
        .getByRole('link', { name: link })
        .click();
      await heading(page, title);
    };
    /** A new browser context signed in as the account holder. */
    const holderContext = async (): Promise<{ context: BrowserContext; page: Page }> => {
      const context = await desktopContext(browser);
      const p = await context.newPage();
      await signIn(p, server.url, holderEmail, PASSWORD);
      await heading(p, 'Overview');
      return { context, page: p };
    };

    before(async () => {
      opened = await sqlite!.open();
      receiver = await startReceiver();
      // A failed delivery is retried only after a minute: the redelivery the operator asks for comes first.
      server = await startTestServer({ backend: opened, extra: { webhookRetryDelaysMs: [60_000] } });
      holder = await server.register(holderEmail);
      await server.register(operatorEmail);
      browser = await launchBrowser();
      operator = await desktopContext(browser);
      page = await operator.newPage();
    });
    after(async () => {
      await browser?.close();
      await server?.close();
      await receiver?.close();
      await opened?.cleanup();
    });

    it('an account holder gets 403 on every operator route, 401 without credentials', async () => {
      for (const [method, path, body] of OPERATOR_ROUTES) {
        const byKey = await server.call(method, path, { key: holder.key, body });
        assert.equal(byKey.status, 403, `${method} ${path} with a user's key`);
        assert.equal(byKey.body.error.code, 'forbidden', `${method} ${path}`);
        assert.equal(byKey.body.error.type, 'permission_error', `${method} ${path}`);
        assert.equal((await server.call(method, path, { body })).status, 401, `${method} ${path} anonymous`);
      }
    });

    it('an account holder never sees the console: no link, a not-allowed page, and no console code loaded', async () => {
      const { context, page: p } = await holderContext();
      try {
        const scripts: string[] = [];
        p.on('request', (request) => {
          if (request.resourceType() === 'script') scripts.push(request.url());
        });
        const nav = p.getByRole('navigation', { name: 'Dashboard' });
        assert.equal(await nav.getByRole('link', { name: 'Operator' }).count(), 0);
        for (const target of OPERATOR_PAGES) {
          await p.goto(`${server.url}${target.path}`);
          await heading(p, 'Not allowed');
          await p.getByRole('alert').filter({ hasText: 'not an operator' }).waitFor();
          assert.equal(await p.getByRole('table').count(), 0, target.path);
        }
        assert.ok(scripts.length > 0, 'the app loaded');
        assert.deepEqual(
          scripts.filter((url) => url.includes('OperatorConsole')),
          [],
          'the console chunk is not downloaded',
        );
        // The session cookie with its CSRF token is refused as well.
        const status = await p.evaluate(async () => {
          const session = (await (await fetch('/api/auth/session')).json()) as { csrf_token: string };
          const response = await fetch('/api/admin/accounts/x/credits', {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-csrf-token': session.csrf_token },
            body: JSON.stringify({ amount_usd: 100 }),
          });
          return response.status;
        });
        assert.equal(status, 403);
      } finally {
        await context.close();
      }
    });

    it('the admin key makes the first operator, who signs in and sees the console', async () => {
      const made = await server.call('POST', '/api/admin/operators', {
        key: ADMIN_KEY,
        body: { email: operatorEmail },
      });
      assert.equal(made.status, 200, JSON.stringify(made.body));
      assert.equal(made.body.role, 'operator');
      await signIn(page, server.url, operatorEmail, PASSWORD);
      await heading(page, 'Overview');
      await page
        .getByRole('navigation', { name: 'Dashboard' })
        .getByRole('link', { name: 'Operator' })
        .click();
      await heading(page, 'Accounts');
      for (const target of OPERATOR_PAGES) {
        await go(target.link, target.heading);
        assert.equal(new URL(page.url()).pathname, target.path);
        assert.equal(await page.getByRole('heading', { level: 1 }).count(), 1, `${target.path}: one h1`);
      }
    });

    it('finds an account, grants it credit, and the account sees it on its own overview', async () => {
      await go('Accounts');
      await page.getByLabel('E-mail or account id').fill(holderEmail);
      await page.getByRole('button', { name: 'Search' }).click();
      await page.getByRole('status').filter({ hasText: 'Accounts 1–1 of 1' }).waitFor();
      await page.getByRole('link', { name: holderEmail }).click();
      await heading(page, holderEmail);
      await page.getByLabel('Amount (USD)').fill('25');
      await page.getByLabel('Expires (UTC, optional)').fill(localInput(30, '12:00'));
      await page.getByRole('button', { name: 'Grant credit' }).click();
      await page.getByRole('status').filter({ hasText: 'Granted USD 25.00' }).waitFor();
      await page.getByTestId('operator-balance').filter({ hasText: 'USD 26.00' }).waitFor();
      await page.getByRole('row').filter({ hasText: 'USD 25.00' }).first().waitFor();

      const { context, page: p } = await holderContext();
      try {
        await p.getByTestId('balance').filter({ hasText: 'USD 26.00' }).waitFor();
      } finally {
        await context.close();
      }
    });

    it('resends the verification mail, whose link verifies the account', async () => {
      const before = server.mails.length;
      await page.getByRole('button', { name: 'Resend verification' }).click();
      await page.getByRole('status').filter({ hasText: 'Verification e-mail sent' }).waitFor();
      // The mail goes through the durable mail queue, a moment later.
      let link = '';
      await until(() => {
        const mail = server.mails.slice(before).find((m) => m.to === holderEmail);
        link = /(\/verify-email\?token=\S+)/.exec(mail?.text ?? '')?.[1] ?? '';
        return link !== '';
      }, 'a verification link in the mail');
      const { context, page: p } = await holderContext();
      try {
        await p.goto(`${server.url}${link}`);
        await p.getByRole('status').filter({ hasText: 'Your e-mail address is verified' }).waitFor();
      } finally {
        await context.close();
      }
      await page.reload();
      await page.getByText('The e-mail address is verified.').waitFor();
    });

    it('suspends the account: its next API call is refused with 403 forbidden, and the audit log says who', async () => {
      const client = new OpenAI({ apiKey: holder.key, baseURL: `${server.url}/v1`, maxRetries: 0 });
      const ask = () =>
        client.chat.completions
          .create({ model: 'model-b', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] })
          .then(
            () => undefined,
            (e: unknown) => e,
          );
      assert.equal(await ask(), undefined, 'the key works before');
      await page.getByLabel('Reason').fill('chargeback under review');
      await page.getByRole('button', { name: 'Suspend account' }).click();
      await page.getByRole('status').filter({ hasText: 'Account suspended.' }).waitFor();
      await page.getByTestId('account-status').filter({ hasText: 'suspended' }).waitFor();
      const error = await ask();
      assert.ok(error instanceof APIError, String(error));
      assert.equal(error.status, 403);
      assert.equal(error.code, 'forbidden');
      assert.equal(error.type, 'permission_error');

      await go('Audit log');
      const row = page.getByRole('row').filter({ hasText: holder.accountId });
      await row
        .filter({ hasText: /suspend/i })
        .filter({ hasText: operatorEmail })
        .first()
        .waitFor();
      await row
        .filter({ hasText: /credit|grant/i })
        .filter({ hasText: operatorEmail })
        .first()
        .waitFor();

      await go('Accounts');
      await page.getByLabel('Status').selectOption('suspended');
      await page.getByRole('link', { name: holderEmail }).waitFor();
      await page.getByLabel('Status').selectOption('active');
      await page.getByRole('link', { name: operatorEmail }).waitFor();
      assert.equal(await page.getByRole('link', { name: holderEmail }).count(), 0);
    });

    it('unsuspends the account: its key works again', async () => {
      await page.getByLabel('Status').selectOption('suspended');
      await page.getByRole('link', { name: holderEmail }).click();
      await heading(page, holderEmail);
      await page.getByRole('button', { name: 'Unsuspend account' }).click();
      await page.getByRole('status').filter({ hasText: 'Account unsuspended.' }).waitFor();
      await page.getByTestId('account-status').filter({ hasText: 'active' }).waitFor();
      const client = new OpenAI({ apiKey: holder.key, baseURL: `${server.url}/v1`, maxRetries: 0 });
      const answer = await client.chat.completions.create({
        model: 'model-b',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'back again' }],
      });
      assert.ok(answer.choices.length > 0);
    });

    it('moves the account to Enterprise with custom caps and a credit limit', async () => {
      await page.goto(`${server.url}/operator/accounts/${holder.accountId}`);
      await heading(page, holderEmail);
      await page.getByLabel('New plan').selectOption('enterprise');
      await page.getByRole('button', { name: 'Change plan' }).click();
      await page.getByRole('status').filter({ hasText: 'Plan set to enterprise.' }).waitFor();
      await page.getByLabel('Requests per minute').fill('1000');
      await page.getByLabel('Credit limit (USD)').fill('50');
      await page.getByRole('button', { name: 'Save caps' }).click();
      await page.getByRole('status').filter({ hasText: 'Caps and credit limit saved.' }).waitFor();
      const summary = page.getByRole('region', { name: 'Summary' });
      await summary.getByText('Enterprise').waitFor();
      await summary.getByText('USD 50.00').waitFor();
      const account = await server.call('GET', '/api/account', { key: holder.key });
      assert.equal(account.body.plan, 'enterprise');
      assert.equal(account.body.limits.requests_per_minute, 1000);
    });

    it('the webhooks page shows an endpoint that keeps failing and redelivers its last event', async () => {
      receiver.answer({ status: 500 });
      const set = await server.call('PUT', '/api/webhooks/endpoint', {
        key: holder.key,
        body: { url: receiver.url },
      });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      assert.equal((await server.call('POST', '/api/webhooks/test', { key: holder.key })).status, 202);
      await receiver.waitFor(1);
      await go('Webhooks');
      const row = page.getByRole('row').filter({ hasText: holderEmail });
      for (let i = 0; i < 50 && (await row.count()) === 0; i++) {
        await page.waitForTimeout(200);
        await page.reload();
      }
      await row.filter({ hasText: receiver.url }).filter({ hasText: /500/ }).waitFor();
      await page.getByRole('button', { name: `Redeliver to ${holderEmail}` }).click();
      await page.getByRole('status').filter({ hasText: 'Redelivery queued.' }).waitFor();
      const [, again] = await receiver.waitFor(2);
      assert.equal(JSON.parse(again!.body).event_type, 'webhook.test');
      // Delivered now: the endpoint leaves the failing list.
      await page.getByText('No endpoint is failing.').waitFor();
    });

    it('a breaking-change notice is refused at 89 days, accepted at 90, shown on /status and mailed', async () => {
      await go('Announcements');
      await page.getByLabel('Title').fill(notice);
      await page.getByLabel('Message').fill('model-a is replaced by model-b.');
      await page.getByLabel('Severity').selectOption('major');
      await page.getByLabel('Affected models').fill('model-a');
      await page.getByLabel('Breaking change').check();
      // 89 days at the day's first minute and 90 at its last: short of and past 90 days, in days or in hours.
      await page.getByLabel('Effective (UTC)').fill(localInput(89, '00:00'));
      await page.getByRole('button', { name: 'Post announcement' }).click();
      await page
        .getByRole('alert')
        .filter({ hasText: /90 days/ })
        .waitFor();
      assert.equal(await page.getByRole('row').filter({ hasText: notice }).count(), 0);

      const mailsBefore = server.mails.length;
      await page.getByLabel('Effective (UTC)').fill(localInput(90, '23:59'));
      await page.getByRole('button', { name: 'Post announcement' }).click();
      await page.getByRole('status').filter({ hasText: 'Announcement posted.' }).waitFor();
      await page.getByRole('row').filter({ hasText: notice }).filter({ hasText: 'model-a' }).waitFor();

      await until(
        async () => (await (await fetch(`${server.url}/status`)).text()).includes(notice),
        'the notice on /status',
      );
      const mailed = () =>
        server.mails.slice(mailsBefore).find((m) => m.to === holderEmail && m.text.includes(notice));
      await until(() => mailed() !== undefined, 'the breaking change mailed to the verified account');
      const mail = mailed()!;
      assert.ok(
        mail.text.includes(localInput(90, '23:59').slice(0, 10)),
        'the mail gives the effective date',
      );
      const json = (await (await fetch(`${server.url}/status.json`)).json()) as {
        breaking_changes: { title: string }[];
      };
      assert.ok(json.breaking_changes.some((change) => change.title === notice));
      const unverified = server.mails.slice(mailsBefore).filter((m) => m.to === operatorEmail);
      assert.deepEqual(unverified, [], 'unverified accounts are not mailed');
    });

    it('edits and ends a notice', async () => {
      await page.getByRole('button', { name: `Edit ${notice}` }).click();
      await page.getByLabel('Title').fill(`${notice} (updated)`);
      await page.getByRole('button', { name: 'Save announcement' }).click();
      await page.getByRole('status').filter({ hasText: 'Announcement saved.' }).waitFor();
      await page.getByRole('button', { name: `End ${notice} (updated)` }).click();
      await page.getByRole('status').filter({ hasText: 'Announcement ended.' }).waitFor();
      await page
        .getByRole('row')
        .filter({ hasText: `${notice} (updated)` })
        .filter({ hasText: 'ended' })
        .waitFor();
    });

    it('every operator page passes an axe scan with no serious or critical findings, and fits 360 px', async () => {
      const targets = [
        ...OPERATOR_PAGES,
        { link: '', path: `/operator/accounts/${holder.accountId}`, heading: holderEmail },
      ];
      for (const width of [1280, 360]) {
        await page.setViewportSize({ width, height: width === 360 ? 780 : 900 });
        for (const target of targets) {
          await page.goto(`${server.url}${target.path}`);
          await heading(page, target.heading);
          await page.waitForLoadState('networkidle');
          // The picture first, so that a failing page can be looked at.
          if (SCREENS) {
            mkdirSync(SCREENS, { recursive: true });
            const name = target.link ? target.link.replace(' ', '-').toLowerCase() : 'account';
            await page.screenshot({ path: join(SCREENS, `operator-${name}-${width}.png`), fullPage: true });
            // The README's picture: the first screen of an account's page at desktop width.
            if (target.link === '' && width === 1280)
              await page.screenshot({
                path: join(SCREENS, 'console.png'),
                clip: { x: 0, y: 0, width: 1280, height: 710 },
              });
          }
          assert.deepEqual(await axeFindings(page), [], `${target.path} at ${width} px`);
          const overflow = await sidewaysOverflow(page);
          assert.ok(overflow <= 0, `${target.path} scrolls sideways by ${overflow} px at ${width} px`);
        }
      }
      await page.setViewportSize({ width: 1280, height: 900 });
    });
  },
);
