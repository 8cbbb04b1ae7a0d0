// The account dashboard driven in a real browser: Debian's chromium through playwright-core, against the real
// server on a loopback port. Without chromium the suite skips with a message, except in CI (CI=true) where
// it fails: .ci/run installs the package.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
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
  eventually,
  heading,
  launchBrowser,
  SCREENS,
  sidewaysOverflow,
  signIn,
  TIMEOUT,
} from '../helpers/browser.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const PASSWORD = 'correct horse battery';
const NEW_PASSWORD = 'a fresh new password';

const missing = browserMissing();

const PAGES = [
  { link: 'Overview', path: '/', heading: 'Overview' },
  { link: 'API keys', path: '/keys', heading: 'API keys' },
  { link: 'Usage', path: '/usage', heading: 'Usage' },
  { link: 'Billing', path: '/billing', heading: 'Billing' },
  { link: 'Webhooks', path: '/webhooks', heading: 'Webhooks' },
  { link: 'Playground', path: '/playground', heading: 'Playground' },
  { link: 'Settings', path: '/settings', heading: 'Settings' },
] as const;

const sqlite = BACKENDS.find((backend) => backend.name === 'sqlite');

describe(
  'the account dashboard in a real browser',
  { skip: missing ?? (sqlite ? false : 'sqlite deselected') },
  () => {
    let opened: OpenedBackend;
    let server: TestServer;
    let receiver: Receiver;
    let browser: Browser;
    let alice: BrowserContext;
    let page: Page;
    const email = `alice-${Date.now()}@example.com`;
    let key = '';

    const go = async (p: Page, link: string, title = link): Promise<void> => {
      await p
        .getByRole('navigation', { name: 'Dashboard' })
        .getByRole('link', { name: link, exact: true })
        .click();
      await heading(p, title);
    };
    const signInAs = (p: Page, who: string, password = PASSWORD): Promise<void> =>
      signIn(p, server.url, who, password);

    before(async () => {
      opened = await sqlite!.open();
      receiver = await startReceiver();
      server = await startTestServer({
        backend: opened,
        extra: {
          sessionPolicy: { attemptsPerEmailPerMinute: 3, attemptsPerIpPerMinute: 200 },
          webhookRetryDelaysMs: [150, 150, 150],
          webhookTimeoutMs: 2_000,
        },
      });
      browser = await launchBrowser();
      alice = await desktopContext(browser);
      page = await alice.newPage();
    });
    after(async () => {
      await browser?.close();
      await server?.close();
      await receiver?.close();
      await opened?.cleanup();
    });

    it('serves the app with a strict CSP, hashed long-cache assets and a no-cache index', async () => {
      const index = await fetch(`${server.url}/keys`);
      assert.equal(index.status, 200);
      const csp = index.headers.get('content-security-policy') ?? '';
      assert.match(csp, /script-src 'self'(;|$)/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
      assert.equal(index.headers.get('cache-control'), 'no-cache');
      const html = await index.text();
      assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
      const asset = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1] ?? '';
      assert.match(asset, /-[\w-]{8}\.js$/, 'hashed name');
      const js = await fetch(`${server.url}${asset}`);
      assert.match(js.headers.get('cache-control') ?? '', /max-age=31536000.*immutable/);
      assert.equal((await fetch(`${server.url}/no-such-page`)).status, 404, 'unknown paths stay 404');
    });

    it('registers, shows the USD 1.00 trial with its expiry, and every page has one h1 in one nav bar', async () => {
      await page.goto(`${server.url}/`);
      await heading(page, 'Sign in to Tollgate');
      await page.getByRole('link', { name: 'Create an account' }).click();
      await page.getByLabel('E-mail').fill(email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Create account' }).click();
      await heading(page, 'Overview');
      // Dates show in the browser's own locale.
      const expiry = await page.evaluate(
        (at) => new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeZone: 'UTC' }).format(at),
        Date.now() + 14 * 86_400_000,
      );
      await page.getByTestId('balance').filter({ hasText: 'USD 1.00' }).waitFor();
      await page.getByText(`Trial credit: USD 1.00 left, expires on ${expiry}`).waitFor();
      for (const target of PAGES) {
        await go(page, target.link, target.heading);
        assert.equal(await page.getByRole('heading', { level: 1 }).count(), 1, `${target.path}: one h1`);
        assert.equal(new URL(page.url()).pathname, target.path);
      }
    });

    it('creates a key, whose request shows in recent requests and usage', async () => {
      await go(page, 'API keys');
      await page.getByLabel('Key name').fill('ci');
      await page.getByRole('button', { name: 'Create key' }).click();
      key = await page.getByLabel('Secret key').inputValue();
      assert.match(key, /^tg-/);
      await page.getByRole('button', { name: 'Revoke ci' }).waitFor();
      const client = new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 });
      const { data, response } = await client.chat.completions
        .create({ model: 'model-b', messages: [{ role: 'user', content: 'Hello from the browser test' }] })
        .withResponse();
      assert.ok(data.usage && data.usage.total_tokens > 0);
      const requestId = response.headers.get('x-request-id') ?? '';
      await go(page, 'Overview');
      await eventually(page, requestId);
      await go(page, 'Usage');
      await page.getByLabel('Group by').selectOption('model');
      const row = page.getByRole('row').filter({ hasText: 'model-b' });
      await row.waitFor();
      assert.match(await row.innerText(), /model-b\s+1\s/);
      assert.match(
        (await page.getByRole('link', { name: 'Download CSV' }).getAttribute('download')) ?? '',
        /\.csv$/,
      );
    });

    it('sets a webhook on a local receiver and delivers a signed test event', async () => {
      await go(page, 'Webhooks');
      await page.getByLabel('Endpoint URL').fill('ftp://example.com/hooks');
      await page.getByRole('button', { name: 'Save endpoint' }).click();
      await page.getByRole('alert').filter({ hasText: 'url must use https' }).waitFor();
      await page.getByLabel('Endpoint URL').fill(receiver.url);
      await page.getByRole('button', { name: 'Save endpoint' }).click();
      const secret = await page.getByLabel('Signing secret').inputValue();
      assert.match(secret, /^whsec_/);
      await page.getByRole('button', { name: 'Send test event' }).click();
      const [delivery] = await receiver.waitFor(1);
      const expected = `sha256=${createHmac('sha256', secret).update(delivery!.body).digest('hex')}`;
      assert.equal(delivery!.headers['x-service-signature'], expected);
      assert.equal(JSON.parse(delivery!.body).event_type, 'webhook.test');
      await page
        .getByRole('row')
        .filter({ hasText: 'webhook.test' })
        .filter({ hasText: 'HTTP 200' })
        .waitFor();
    });

    it('tops up through the test provider: the balance grows and payment.success is delivered', async () => {
      await go(page, 'Billing');
      await page.getByLabel('Top-up amount (USD)').fill('5');
      await page.getByRole('button', { name: 'Top up' }).click();
      await page.waitForURL(/\/checkout\//);
      await page.getByRole('button', { name: 'Pay (succeeds)' }).click();
      await page.getByText('"status": "paid"').waitFor();
      await page.getByRole('link', { name: 'Back to billing in the dashboard' }).click();
      await heading(page, 'Billing');
      await page.getByRole('row').filter({ hasText: 'Top-up' }).filter({ hasText: 'paid' }).waitFor();
      const deliveries = await receiver.waitFor(2);
      assert.equal(JSON.parse(deliveries[1]!.body).event_type, 'payment.success');
      await go(page, 'Overview');
      await page
        .getByTestId('balance')
        .filter({ hasText: /USD [56]\.\d\d/ })
        .waitFor();
      const balance = await page.getByTestId('balance').innerText();
      assert.ok(Number(balance.replace('USD ', '')) > 5.9, balance);
      await go(page, 'Webhooks');
      await page
        .getByRole('row')
        .filter({ hasText: 'payment.success' })
        .filter({ hasText: 'delivered' })
        .waitFor();
    });

    it('the playground streams an answer billed to the account, on the session', async () => {
      await go(page, 'Playground');
      await page.getByLabel('Model', { exact: true }).selectOption('model-e');
      await page.getByLabel('Message').fill('Say something short');
      await page.getByRole('button', { name: 'Send' }).click();
      await page
        .getByRole('status', { name: 'Tokens and cost of model-e' })
        .filter({ hasText: /Tokens: \d+ in, \d+ out; cost USD/ })
        .waitFor();
    });

    it('a revoked key gets 403 (the spec: revoked is forbidden, unknown is 401)', async () => {
      await go(page, 'API keys');
      await page.getByRole('button', { name: 'Revoke ci' }).click();
      await page.getByRole('button', { name: 'Yes, revoke ci' }).click();
      await page.getByRole('row').filter({ hasText: 'ci' }).filter({ hasText: 'revoked' }).first().waitFor();
      const client = new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 });
      const error = await client.chat.completions
        .create({ model: 'model-b', messages: [{ role: 'user', content: 'still there?' }] })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      assert.ok(error instanceof APIError);
      assert.equal(error.status, 403);
    });

    it('a key with a spending limit, an expiry and allowed models: shown, enforced and edited', async () => {
      await go(page, 'API keys');
      await page.getByLabel('Key name').fill('budget');
      await page.getByLabel('Spending limit in USD', { exact: true }).fill('1');
      await page.getByLabel('Limit resets', { exact: true }).selectOption('daily');
      await page.getByLabel('Expires (UTC)', { exact: true }).fill('2099-01-01T00:00');
      await page.getByLabel('Allowed models', { exact: true }).fill('model-b');
      await page.getByRole('button', { name: 'Create key' }).click();
      const budgetKey = await page.getByLabel('Secret key').inputValue();
      const row = page.getByRole('row').filter({ hasText: 'budget' });
      await row
        .filter({ hasText: 'USD 1.00 per day, USD 1.00 left' })
        .filter({ hasText: 'model-b' })
        .waitFor();
      const client = new OpenAI({ apiKey: budgetKey, baseURL: `${server.url}/v1`, maxRetries: 0 });
      const ask = (model: string) =>
        client.chat.completions
          .create({ model, max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] })
          .then(
            () => 200,
            (e: unknown) => (e instanceof APIError ? `${e.status} ${e.message}` : String(e)),
          );
      assert.equal(await ask('model-b'), 200);
      assert.match(String(await ask('model-a')), /^403 .*allowed models rule permits only model-b/);
      const own = (await (
        await fetch(`${server.url}/api/key`, { headers: { authorization: `Bearer ${budgetKey}` } })
      ).json()) as { expires_at: string };
      assert.equal(own.expires_at, '2099-01-01T00:00:00.000Z');

      await page.getByRole('button', { name: 'Edit controls of budget' }).click();
      const limit = page.getByLabel('Spending limit in USD (edit)', { exact: true });
      assert.equal(await limit.inputValue(), '1', 'the form starts from the key as it is');
      await limit.fill('0');
      await page.getByLabel('Allowed models (edit)', { exact: true }).fill('');
      await page.getByRole('button', { name: 'Save controls' }).click();
      await row.filter({ hasText: 'USD 0.00 per day' }).filter({ hasText: 'all' }).waitFor();
      assert.match(String(await ask('model-a')), /^402 .*spending limit of \$0\.000000 per day/);
    });

    it('a cookie request without the CSRF token is refused', async () => {
      const status = await page.evaluate(async () => {
        const response = await fetch('/api/keys', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'forged' }),
        });
        return response.status;
      });
      assert.equal(status, 403);
      await go(page, 'API keys');
      assert.equal(await page.getByRole('row').filter({ hasText: 'forged' }).count(), 0);
    });

    it('another account never sees this one', async () => {
      const bob = await browser.newContext();
      try {
        bob.setDefaultTimeout(TIMEOUT);
        const bobPage = await bob.newPage();
        const bobEmail = `bob-${Date.now()}@example.com`;
        await server.register(bobEmail);
        await signInAs(bobPage, bobEmail);
        await heading(bobPage, 'Overview');
        await bobPage.getByText('No requests yet.').first().waitFor();
        await go(bobPage, 'API keys');
        // The key's name cell, exactly: a row's random key prefix may hold the letters "ci" too.
        assert.equal(await bobPage.getByRole('cell', { name: 'ci', exact: true }).count(), 0);
        const aliceKeys = await page.evaluate(
          async () => (await (await fetch('/api/keys')).json()) as { data: { id: string }[] },
        );
        const stolen = await bobPage.evaluate(
          async (id) => (await fetch(`/api/keys/${id}`, { method: 'DELETE' })).status,
          aliceKeys.data[0]!.id,
        );
        assert.equal(stolen, 403, 'no CSRF token: refused before anything else');
        await go(bobPage, 'Webhooks');
        await bobPage.getByText('No endpoint is set.').waitFor();
        await go(bobPage, 'Billing');
        await bobPage.getByText('No orders yet.').waitFor();
      } finally {
        await bob.close();
      }
    });

    it('every page passes an axe scan with no serious or critical findings, and fits 360 px', async () => {
      for (const width of [1280, 360]) {
        await page.setViewportSize({ width, height: width === 360 ? 780 : 900 });
        for (const target of PAGES) {
          await go(page, target.link, target.heading);
          await page.waitForLoadState('networkidle');
          const violations = await axeFindings(page);
          assert.deepEqual(violations, [], `${target.path} at ${width} px`);
          const overflow = await sidewaysOverflow(page);
          assert.ok(overflow <= 0, `${target.path} scrolls sideways by ${overflow} px at ${width} px`);
          if (SCREENS) {
            mkdirSync(SCREENS, { recursive: true });
            await page.screenshot({
              path: join(SCREENS, `${target.link.replace(' ', '-').toLowerCase()}-${width}.png`),
              fullPage: true,
            });
            // The README's picture: the overview's first screen at desktop width.
            if (target.path === '/' && width === 1280)
              await page.screenshot({ path: join(SCREENS, 'dashboard.png') });
          }
        }
      }
      await page.setViewportSize({ width: 1280, height: 900 });
    });

    it('signing out ends the session: the old cookie gets 401', async () => {
      const cookies = await alice.cookies(server.url);
      const session = cookies.find((cookie) => cookie.name === 'tollgate_session');
      assert.ok(session?.httpOnly);
      assert.equal(session.sameSite, 'Lax');
      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await heading(page, 'Sign in to Tollgate');
      const reused = await fetch(`${server.url}/api/account`, {
        headers: { cookie: `tollgate_session=${session.value}` },
      });
      assert.equal(reused.status, 401);
    });

    it('resets the password by the mailed link, then signs in with the new one', async () => {
      const p = await alice.newPage();
      try {
        await p.goto(`${server.url}/login`);
        await p.getByRole('link', { name: 'Forgot your password?' }).click();
        await p.getByLabel('E-mail').fill(email);
        await p.getByRole('button', { name: 'Send reset link' }).click();
        await p.getByRole('status').filter({ hasText: 'reset link' }).waitFor();
        const link = /(\/reset-password\?token=\S+)/.exec(server.mails.at(-1)?.text ?? '')?.[1];
        assert.ok(link, 'a reset link was mailed');
        await p.goto(`${server.url}${link}`);
        await p.getByLabel('New password').fill(NEW_PASSWORD);
        await p.getByRole('button', { name: 'Set new password' }).click();
        await p.getByRole('status').filter({ hasText: 'Your password is changed' }).waitFor();
        await p.goto(`${server.url}${link}`);
        await p.getByLabel('New password').fill('yet another password');
        await p.getByRole('button', { name: 'Set new password' }).click();
        await p.getByRole('alert').filter({ hasText: 'already used' }).waitFor();
        await signInAs(p, email.toUpperCase(), NEW_PASSWORD);
        await heading(p, 'Overview');
      } finally {
        await p.close();
      }
    });

    it('a wrong password is refused without saying whether the e-mail exists, then sign-in is throttled', async () => {
      const stranger = await browser.newContext();
      stranger.setDefaultTimeout(TIMEOUT);
      const p = await stranger.newPage();
      try {
        await signInAs(p, email, 'not my password');
        const wrong = await p.getByRole('alert').innerText();
        assert.match(wrong, /e-mail or the password is wrong/);
        await signInAs(p, `nobody-${Date.now()}@example.com`, 'not my password');
        assert.equal(await p.getByRole('alert').innerText(), wrong);
        await signInAs(p, email, 'not my password');
        await signInAs(p, email, 'not my password');
        await p.getByRole('alert').filter({ hasText: 'too many sign-in attempts' }).waitFor();
        for (const [path, title] of [
          ['/login', 'Sign in to Tollgate'],
          ['/register', 'Create a Tollgate account'],
          ['/forgot-password', 'Reset your password'],
          ['/reset-password?token=x', 'Choose a new password'],
        ] as const) {
          await p.goto(`${server.url}${path}`);
          await heading(p, title);
          assert.deepEqual(await axeFindings(p), [], path);
        }
      } finally {
        await stranger.close();
      }
    });
  },
);
