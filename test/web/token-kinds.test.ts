// The dashboard shows the kinds of tokens: a long prompt sent twice to the simulator (its prompt cache answers
// the second) on a reasoning model; the usage table and recent requests say how many were cached and reasoning,
// and the playground's model list gives the cached-input price. Desktop and phone widths, screenshots when asked.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { BACKENDS, type OpenedBackend } from '../helpers/backends.ts';
import {
  browserMissing,
  desktopContext,
  eventually,
  heading,
  launchBrowser,
  SCREENS,
  sidewaysOverflow,
  signIn,
} from '../helpers/browser.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const missing = browserMissing();
const sqlite = BACKENDS.find((backend) => backend.name === 'sqlite');
const SYSTEM = Array.from({ length: 1_000 }, (_, i) => `Rule ${i}: answer briefly.`).join(' ');

describe('token kinds on the dashboard', { skip: missing ?? (sqlite ? false : 'sqlite deselected') }, () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let cached = 0;

  before(async () => {
    opened = await sqlite!.open();
    server = await startTestServer({ backend: opened, yaml: { simulator: { chunk_interval_ms: 0 } } });
    const email = `kinds-${Date.now()}@example.com`;
    const { key } = await server.register(email);
    const client = new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 });
    for (let i = 0; i < 2; i++) {
      const answer = await client.chat.completions.create({
        model: 'model-d',
        messages: [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: 'What is rule 7?' },
        ],
      });
      cached = answer.usage?.prompt_tokens_details?.cached_tokens ?? 0;
    }
    assert.ok(cached > 0);
    await server.services.settlements.flush();
    browser = await launchBrowser();
    context = await desktopContext(browser);
    page = await context.newPage();
    await signIn(page, server.url, email, 'correct horse battery');
    await heading(page, 'Overview');
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await opened?.cleanup();
  });

  it('the usage table, the recent requests and the playground tell cache reads, reasoning and the cached price', async () => {
    const cachedText = `${cached.toLocaleString('en-US')} cached`;
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${server.url}/usage`);
      await heading(page, 'Usage');
      await page
        .getByLabel('Group by')
        .selectOption('model')
        .catch(() => {});
      await eventually(page, cachedText);
      await eventually(page, /96 reasoning/);
      assert.equal(await sidewaysOverflow(page), 0, `the usage page fits at ${width}`);
      if (SCREENS) {
        mkdirSync(SCREENS, { recursive: true });
        await page.screenshot({ path: join(SCREENS, `token-kinds-usage-${width}.png`), fullPage: true });
      }
      await page.goto(`${server.url}/`);
      await heading(page, 'Overview');
      await eventually(page, cachedText);
      assert.equal(await sidewaysOverflow(page), 0, `the overview fits at ${width}`);
      if (SCREENS)
        await page.screenshot({ path: join(SCREENS, `token-kinds-overview-${width}.png`), fullPage: true });
    }
    await page.goto(`${server.url}/playground`);
    await heading(page, 'Playground');
    const option = page.locator('option[value="model-a"]').first();
    await option.waitFor({ state: 'attached' });
    assert.match((await option.textContent()) ?? '', /USD 3\.5 in, 0\.35 cached/);
  });
});
