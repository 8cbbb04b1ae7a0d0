// Every operator console page, loaded fresh at desktop and phone width, holds still while its data arrives
// (cumulative layout shift under 0.1), has no serious axe finding and does not scroll sideways: the same
// checks the account dashboard's pages pass, with data in every table.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
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
import { LAYOUT_SHIFT_LIMIT, LAYOUT_WIDTHS, layoutShift, watchLayoutShift } from '../helpers/layout-shift.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';

const PASSWORD = 'correct horse battery';
const missing = browserMissing();
const sqlite = BACKENDS.find((backend) => backend.name === 'sqlite');

describe(
  'operator console pages hold still and fit',
  { skip: missing ?? (sqlite ? false : 'sqlite deselected') },
  () => {
    let opened: OpenedBackend;
    let server: TestServer;
    let receiver: Receiver;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    let holderEmail: string;
    let holderId: string;

    before(async () => {
      opened = await sqlite!.open();
      receiver = await startReceiver();
      // A failed delivery is retried only after a minute: the endpoint stays on the failing list meanwhile.
      server = await startTestServer({ backend: opened, extra: { webhookRetryDelaysMs: [60_000] } });
      const stamp = Date.now();
      const operatorEmail = `ops-layout-${stamp}@example.com`;
      holderEmail = `holder-with-a-rather-long-address-${stamp}@example.com`;
      const holder = await server.register(holderEmail);
      holderId = holder.accountId;
      await server.register(operatorEmail);
      const made = await server.call('POST', '/api/admin/operators', {
        key: ADMIN_KEY,
        body: { email: operatorEmail },
      });
      assert.equal(made.status, 200);
      // Something in every table: usage, a credit grant and a suspension in the audit log, a notice, an endpoint
      // that keeps failing.
      const client = new OpenAI({ apiKey: holder.key, baseURL: `${server.url}/v1`, maxRetries: 0 });
      await client.chat.completions.create({
        model: 'model-a',
        messages: [{ role: 'user', content: 'hello' }],
      });
      const admin = (method: string, path: string, body: unknown) =>
        server.call(method, path, { key: ADMIN_KEY, body });
      assert.equal(
        (await admin('POST', `/api/admin/accounts/${holderId}/credits`, { amount_usd: 5 })).status,
        201,
      );
      await admin('POST', `/api/admin/accounts/${holderId}/suspend`, { reason: 'layout check' });
      await admin('POST', `/api/admin/accounts/${holderId}/unsuspend`, {});
      await admin('POST', '/api/admin/announcements', {
        title: 'Scheduled maintenance of the EU region',
        body: 'Requests may be slower for a few minutes.',
        severity: 'info',
      });
      receiver.answer({ status: 500 });
      const endpoint = { key: holder.key, body: { url: receiver.url } };
      assert.equal((await server.call('PUT', '/api/webhooks/endpoint', endpoint)).status, 200);
      assert.equal((await server.call('POST', '/api/webhooks/test', { key: holder.key })).status, 202);
      await until(async () => {
        const failing = await server.call('GET', '/api/admin/webhooks', { key: ADMIN_KEY });
        return JSON.stringify(failing.body).includes(receiver.url);
      }, 'the endpoint on the failing list');
      browser = await launchBrowser();
      context = await desktopContext(browser);
      await context.addInitScript(watchLayoutShift);
      page = await context.newPage();
      await signIn(page, server.url, operatorEmail, PASSWORD);
      await heading(page, 'Overview');
    });
    after(async () => {
      await browser?.close();
      await server?.close();
      await receiver?.close();
      await opened?.cleanup();
    });

    const pages = () =>
      [
        { path: '/operator/accounts', heading: 'Accounts', shot: 'accounts' },
        { path: `/operator/accounts/${holderId}`, heading: holderEmail, shot: 'account' },
        { path: '/operator/statistics', heading: 'Statistics', shot: 'statistics' },
        { path: '/operator/deployments', heading: 'Deployments', shot: 'deployments' },
        { path: '/operator/webhooks', heading: 'Webhooks', shot: 'webhooks' },
        { path: '/operator/announcements', heading: 'Announcements', shot: 'announcements' },
        { path: '/operator/audit', heading: 'Audit log', shot: 'audit-log' },
      ] as const;

    for (const size of LAYOUT_WIDTHS)
      it(`every operator page at ${size.width} px: layout shift under ${LAYOUT_SHIFT_LIMIT}, no serious axe finding, no sideways scroll`, async () => {
        await page.setViewportSize(size);
        const problems: string[] = [];
        for (const target of pages()) {
          await page.goto(`${server.url}${target.path}`);
          await heading(page, target.heading);
          await page.waitForLoadState('networkidle');
          await page.waitForTimeout(300);
          const shift = await layoutShift(page);
          if (SCREENS) {
            mkdirSync(SCREENS, { recursive: true });
            await page.screenshot({
              path: join(SCREENS, `operator-layout-${target.shot}-${size.width}.png`),
              fullPage: true,
            });
          }
          if (shift >= LAYOUT_SHIFT_LIMIT) problems.push(`${target.path} shifts by ${shift.toFixed(3)}`);
          for (const finding of await axeFindings(page)) problems.push(`${target.path}: axe ${finding}`);
          const overflow = await sidewaysOverflow(page);
          if (overflow > 0) problems.push(`${target.path} scrolls sideways by ${overflow} px`);
        }
        assert.deepEqual(problems, [], `at ${size.width} px`);
      });
  },
);
