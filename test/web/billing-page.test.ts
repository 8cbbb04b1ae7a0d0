// The billing page driven in a real browser (chromium through playwright-core) against the real server on
// SQLite: subscribe with the test provider, see the next renewal date, cancel, resume, renew with the billing
// clock, and open and download an invoice. Screenshots at 1280 and 390 wide when TOLLGATE_SCREENSHOTS is set.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
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
