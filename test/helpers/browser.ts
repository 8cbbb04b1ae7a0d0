// What the browser suites share: Debian's chromium through playwright-core, an axe-core scan, and small waits.
// Without chromium a suite skips with a message, except in CI (CI=true) where it fails: .ci/run installs it.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { WEB_DIST } from '../../src/http/web-app.ts';

export const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
/** Set to a folder to save a screenshot of every page at desktop and phone width. */
export const SCREENS = process.env['TOLLGATE_SCREENSHOTS'];
export const TIMEOUT = 10_000;

/** Why the browser suites cannot run here (undefined: they can); throws in CI, where they must run. */
export function browserMissing(): string | undefined {
  let missing: string | undefined;
  if (!existsSync(CHROMIUM))
    missing = `chromium is not installed at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`;
  else if (!existsSync(join(WEB_DIST, 'index.html')))
    missing = 'the dashboard is not built (npm install builds web/dist)';
  if (missing && process.env['CI'] === 'true')
    throw new Error(`the browser suite cannot run in CI: ${missing}`);
  if (missing) console.log(`# browser suite skipped: ${missing}`);
  return missing;
}

/** Chromium, headless, with a fresh temporary profile (playwright's own --user-data-dir) per launch. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** A fresh browser context (its own cookies) at desktop size, whose waits give up after TIMEOUT. */
export async function desktopContext(browser: Browser): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(TIMEOUT);
  return context;
}

/** Waits for the page's h1 with this name. */
export const heading = (page: Page, name: string): Promise<void> =>
  page.getByRole('heading', { level: 1, name }).waitFor({ timeout: TIMEOUT });

/** Signs in on the app's sign-in page (the caller waits for what should follow). */
export async function signIn(page: Page, baseUrl: string, email: string, password: string): Promise<void> {
  await page.goto(`${baseUrl}/login`);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

let axeSource: string | undefined;

/** axe-core's serious and critical findings on the page as it stands. */
export async function axeFindings(page: Page): Promise<string[]> {
  axeSource ??= readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  // Evaluated through the DevTools protocol, which the page's CSP does not govern (no inline script).
  await page.evaluate(axeSource);
  return page.evaluate(async () => {
    const result = await (
      globalThis as unknown as {
        axe: {
          run(): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }>;
        };
      }
    ).axe.run();
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
}

/** How many pixels the page scrolls sideways (0 or less: it fits the viewport). */
export function sidewaysOverflow(page: Page): Promise<number> {
  return page.evaluate(() => {
    // Runs in the page; the test's own types know no DOM.
    const root = (globalThis as any).document.documentElement as { scrollWidth: number; clientWidth: number };
    return root.scrollWidth - root.clientWidth;
  });
}

/** Reloads until the text shows (usage records are written in batches a moment after the request). */
export async function eventually(page: Page, text: string | RegExp): Promise<void> {
  const started = Date.now();
  for (;;) {
    try {
      await page.getByText(text).first().waitFor({ timeout: 1_000 });
      return;
    } catch (error) {
      if (Date.now() - started > TIMEOUT) throw error;
      await page.reload();
    }
  }
}
