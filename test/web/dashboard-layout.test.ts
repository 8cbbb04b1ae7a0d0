// Every dashboard page, loaded fresh at desktop and phone width: it holds still while its data arrives
// (cumulative layout shift under 0.1, measured by the page's own PerformanceObserver), axe finds nothing
// serious, nothing scrolls sideways, and the keys table shows every row's actions on a desktop screen.
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
import { startTestServer, type TestServer } from '../helpers/server.ts';

const missing = browserMissing();
const sqlite = BACKENDS.find((backend) => backend.name === 'sqlite');
const LIMIT = LAYOUT_SHIFT_LIMIT;

const PAGES = [
  { path: '/', heading: 'Overview', shot: 'overview' },
  { path: '/keys', heading: 'API keys', shot: 'api-keys' },
  { path: '/usage', heading: 'Usage', shot: 'usage' },
  { path: '/billing', heading: 'Billing', shot: 'billing' },
  { path: '/webhooks', heading: 'Webhooks', shot: 'webhooks' },
  { path: '/playground', heading: 'Playground', shot: 'playground' },
  { path: '/settings', heading: 'Settings', shot: 'settings' },
] as const;
const WIDTHS = LAYOUT_WIDTHS;

describe(
  'dashboard pages hold still and fit',
  { skip: missing ?? (sqlite ? false : 'sqlite deselected') },
  () => {
    let opened: OpenedBackend;
    let server: TestServer;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;

    before(async () => {
      opened = await sqlite!.open();
      server = await startTestServer({ backend: opened });
      const email = `layout-${Date.now()}@example.com`;
      const { key } = await server.register(email);
      // A trial account at its cap, with long key names and some usage: the tables have something to fit.
      for (const name of ['production-backend-eu-west', 'staging'])
        assert.equal((await server.call('POST', '/api/keys', { key, body: { name } })).status, 201);
      const client = new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 });
      await client.chat.completions.create({
        model: 'model-a',
        messages: [{ role: 'user', content: 'hello' }],
      });
      browser = await launchBrowser();
      context = await desktopContext(browser);
      await context.addInitScript(watchLayoutShift);
      page = await context.newPage();
      await signIn(page, server.url, email, 'correct horse battery');
      await heading(page, 'Overview');
    });
    after(async () => {
      await browser?.close();
      await server?.close();
      await opened?.cleanup();
    });

    /** Loads `path` afresh and waits until its data has arrived and it has had a moment to settle. */
    async function load(path: string, title: string): Promise<number> {
      await page.goto(`${server.url}${path}`);
      await heading(page, title);
      await page.waitForLoadState('networkidle');
      await page.waitForTimeout(300);
      return layoutShift(page);
    }

    for (const size of WIDTHS)
      it(`every page at ${size.width} px: layout shift under ${LIMIT}, no serious axe finding, no sideways scroll`, async () => {
        await page.setViewportSize(size);
        const shifts: string[] = [];
        for (const target of PAGES) {
          const shift = await load(target.path, target.heading);
          if (shift >= LIMIT) shifts.push(`${target.path}: ${shift.toFixed(3)}`);
          assert.deepEqual(await axeFindings(page), [], `${target.path} at ${size.width} px`);
          const overflow = await sidewaysOverflow(page);
          assert.ok(overflow <= 0, `${target.path} scrolls sideways by ${overflow} px at ${size.width} px`);
          if (SCREENS) {
            mkdirSync(SCREENS, { recursive: true });
            await page.screenshot({
              path: join(SCREENS, `${target.shot}-${size.width}.png`),
              fullPage: true,
            });
            if (target.path === '/' && size.width === 1280)
              await page.screenshot({ path: join(SCREENS, 'dashboard.png') });
          }
        }
        assert.deepEqual(shifts, [], `cumulative layout shift at ${size.width} px`);
      });

    it('the signed-out pages hold still and pass axe at both widths', async () => {
      const stranger = await desktopContext(browser);
      await stranger.addInitScript(watchLayoutShift);
      const p = await stranger.newPage();
      try {
        for (const size of WIDTHS) {
          await p.setViewportSize(size);
          for (const [path, title] of [
            ['/login', 'Sign in to Tollgate'],
            ['/register', 'Create a Tollgate account'],
          ] as const) {
            await p.goto(`${server.url}${path}`);
            await heading(p, title);
            await p.waitForLoadState('networkidle');
            const shift = await layoutShift(p);
            assert.ok(shift < LIMIT, `${path} at ${size.width} px shifts by ${shift}`);
            assert.deepEqual(await axeFindings(p), [], `${path} at ${size.width} px`);
          }
        }
      } finally {
        await stranger.close();
      }
    });

    it('the keys page at 1280 px shows every row’s Revoke without sideways scrolling', async () => {
      await page.setViewportSize({ width: 1280, height: 900 });
      await load('/keys', 'API keys');
      const table = page.locator('.keys-table');
      const scroll = await table.evaluate((el) => el.scrollWidth - el.clientWidth);
      assert.ok(scroll <= 0, `the keys table scrolls sideways by ${scroll} px`);
      const rows = table.locator('tbody tr');
      assert.equal(await rows.count(), 3);
      for (let i = 0; i < 3; i++) {
        const revoke = rows.nth(i).getByRole('button', { name: /^Revoke / });
        const box = await revoke.boundingBox();
        assert.ok(box, `row ${i}: a Revoke button`);
        assert.ok(
          box.x >= 0 && box.x + box.width <= 1280,
          `row ${i}: Revoke at x ${box.x}..${box.x + box.width}`,
        );
        assert.ok(await revoke.isVisible());
      }
    });
  },
);
