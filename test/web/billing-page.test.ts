// The billing page driven in a real browser (chromium through playwright-core) against the real server on
// SQLite: subscribe with the test provider, see the next renewal date, cancel, resume, renew with the billing
// clock, and open and download an invoice. Screenshots at 1280 and 390 wide when TOLLGATE_SCREENSHOTS is set.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
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
} from '../helpers/browser.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from '../helpers/server.ts';

const PASSWORD = 'correct horse battery';
const missing = browserMissing();
const sqlite = BACKENDS.find((backend) => backend.name === 'sqlite');

describe(
  'the billing page in a real browser',
  { skip: missing ?? (sqlite ? false : 'sqlite deselected') },
  () => {
    let opened: OpenedBackend;
    let server: TestServer;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    const email = `billing-${Date.now()}@example.com`;

    before(async () => {
      opened = await sqlite!.open();
      server = await startTestServer({ backend: opened });
      browser = await launchBrowser();
      context = await desktopContext(browser);
      page = await context.newPage();
    });
    after(async () => {
      await browser?.close();
      await server?.close();
      await opened?.cleanup();
    });

    const billing = async (): Promise<void> => {
      await page.goto(`${server.url}/billing`);
      await heading(page, 'Billing');
    };

    it('subscribes to Starter and shows the next renewal date', async () => {
      await page.goto(`${server.url}/register`);
      await page.getByLabel('E-mail').fill(email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Create account' }).click();
      await heading(page, 'Overview');
      await billing();
      await page.getByText('No subscription yet').waitFor();
      await page.getByRole('button', { name: 'Buy Starter' }).click();
      await page.waitForURL(/\/checkout\//);
      await page.getByRole('button', { name: 'Pay (succeeds)' }).click();
      await page.getByText('"status": "paid"').waitFor();
      await page.getByRole('link', { name: 'Back to billing in the dashboard' }).click();
      await heading(page, 'Billing');
      await page.getByTestId('subscription-status').filter({ hasText: 'active' }).waitFor();
      const renewal = await page.getByTestId('next-renewal').innerText();
      const expected = await page.evaluate(
        (at) => new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeZone: 'UTC' }).format(at),
        Date.now() + 30 * 86_400_000,
      );
      assert.ok(renewal.includes(expected), `next renewal ${renewal}, expected ${expected}`);
      await page.getByText('Who pays for a request, in this order').waitFor();
    });

    it('cancels at the period end and resumes', async () => {
      await page.getByRole('button', { name: 'Cancel at period end' }).click();
      await page.getByTestId('ends-at').waitFor();
      assert.equal(await page.getByTestId('next-renewal').count(), 0);
      await page.getByRole('button', { name: 'Resume subscription' }).click();
      await page.getByTestId('next-renewal').waitFor();
      await page.getByRole('button', { name: 'Cancel at period end' }).waitFor();
    });

    it('after a renewal on the billing clock, opens and downloads an invoice', async () => {
      const account = await server.services.store.accounts.byEmail(email);
      const moved = await server.call('POST', '/api/admin/billing/advance', {
        key: ADMIN_KEY,
        body: { account_id: account!.id, days: 30 },
      });
      assert.equal(moved.status, 200);
      await billing();
      const rows = page.getByRole('region', { name: 'Invoices', exact: true }).getByRole('row');
      await rows.filter({ hasText: 'TG-000002' }).waitFor();
      assert.equal(await rows.filter({ hasText: /TG-\d{6}/ }).count(), 2);
      await page.getByRole('button', { name: 'Open TG-000002' }).click();
      const invoice = page.getByRole('article', { name: 'Invoice TG-000002' });
      await invoice.getByText(/^Starter plan, \d{4}-\d{2}-\d{2} to \d{4}-\d{2}-\d{2}$/).waitFor();
      await invoice.getByText(email).waitFor();
      if (SCREENS) {
        mkdirSync(SCREENS, { recursive: true });
        await page.screenshot({ path: join(SCREENS, 'billing-1280.png'), fullPage: true });
      }
      assert.deepEqual(await axeFindings(page), []);
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByRole('button', { name: 'Download TG-000002' }).click(),
      ]);
      assert.equal(download.suggestedFilename(), 'invoice-TG-000002.html');
      const html = readFileSync(await download.path(), 'utf8');
      assert.match(html, /<h1>Invoice TG-000002<\/h1>/);
      assert.match(html, /USD 20\.00/);
    });

    it('saves the billing details and the alert settings', async () => {
      await billing();
      const details = page.getByTestId('billing-details');
      await details.getByLabel('Name or company').fill('Acme Research Ltd');
      await details.getByLabel('Address').fill('1 Long Street, Cape Town');
      await details.getByLabel('Tax id').fill('ZA4123456789');
      await details.getByRole('button', { name: 'Save details' }).click();
      await details.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
      const account = await server.services.store.accounts.byEmail(email);
      const saved = await server.services.store.billing.details(account!.id);
      assert.equal(saved.name, 'Acme Research Ltd');
      assert.equal(saved.address, '1 Long Street, Cape Town');
      assert.equal(saved.taxId, 'ZA4123456789');

      const alerts = page.getByTestId('alert-settings');
      await alerts.getByLabel(/balance falls below/).fill('5');
      await alerts.getByRole('checkbox', { name: /key\.limit_reached/ }).check();
      await alerts.getByRole('checkbox', { name: /balance\.low/ }).check();
      await alerts.getByRole('button', { name: 'Save alerts' }).click();
      await alerts.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
      const settings = await server.services.store.billing.alertSettings(account!.id);
      assert.equal(settings.lowBalanceMicros, 5_000_000);
      assert.deepEqual([...settings.events].sort(), ['balance.low', 'key.limit_reached']);
      await billing();
      // The page fills its forms when their settings arrive: wait (up to 5 s) for them before reading the fields.
      const threshold = alerts.getByLabel(/balance falls below/);
      for (let tries = 0; tries < 50 && (await threshold.inputValue()) !== '5'; tries++) await delay(100);
      assert.equal(await alerts.getByLabel(/balance falls below/).inputValue(), '5');
      assert.ok(await alerts.getByRole('checkbox', { name: /key\.limit_reached/ }).isChecked());
      assert.equal(await details.getByLabel('Tax id').inputValue(), 'ZA4123456789');
    });

    it('upgrades to Pro now with the unused part credited, and downgrades at the period end', async () => {
      await billing();
      await page.getByRole('button', { name: 'Upgrade to Pro now' }).click();
      const plan = page.getByRole('region', { name: 'Subscription' }).locator('dd').first();
      await plan.filter({ hasText: 'pro' }).waitFor();
      const rows = page.getByRole('region', { name: 'Invoices', exact: true }).getByRole('row');
      await rows.filter({ hasText: 'TG-000003' }).waitFor();
      await page.getByRole('button', { name: 'Open TG-000003' }).click();
      const invoice = page.getByRole('article', { name: 'Invoice TG-000003' });
      await invoice.getByText(/^Pro plan, /).waitFor();
      await invoice.getByText('Unused time on the Starter plan').waitFor();
      await invoice.getByText('Acme Research Ltd').waitFor();
      await page.getByRole('button', { name: 'Downgrade to Starter at period end' }).click();
      await page.getByText('From the next period').waitFor();
      const account = await server.services.store.accounts.byEmail(email);
      const sub = await server.services.store.billing.subscription(account!.id);
      assert.equal(sub?.plan, 'pro');
      assert.equal(sub?.nextPlan, 'starter');
      if (SCREENS) await page.screenshot({ path: join(SCREENS, 'billing-upgrade-1280.png'), fullPage: true });
      assert.deepEqual(await axeFindings(page), []);
    });

    it('fits a phone screen', async () => {
      await page.setViewportSize({ width: 390, height: 844 });
      await billing();
      await page.getByTestId('next-renewal').waitFor();
      await page.getByRole('button', { name: 'Open TG-000001' }).click();
      assert.ok((await sidewaysOverflow(page)) <= 0, 'no sideways scrolling');
      if (SCREENS) await page.screenshot({ path: join(SCREENS, 'billing-390.png'), fullPage: true });
    });
  },
);
