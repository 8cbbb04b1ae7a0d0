// The members page: an owner invites a developer and a viewer, gives the developer a role change through the
// page, and a viewer sees the members but no invite form or remove buttons (the API refuses them too).
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { BACKENDS, type OpenedBackend } from '../helpers/backends.ts';
import {
  browserMissing,
  desktopContext,
  heading,
  launchBrowser,
  SCREENS,
  signIn,
} from '../helpers/browser.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const missing = browserMissing();
const sqlite = BACKENDS.find((backend) => backend.name === 'sqlite');
const PASSWORD = 'correct horse battery';

describe('the members page', { skip: missing ?? (sqlite ? false : 'sqlite deselected') }, () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  const ownerEmail = `owner-${Date.now()}@example.com`;
  const viewerEmail = `viewer-${Date.now()}@example.com`;
  let orgId: string;

  before(async () => {
    opened = await sqlite!.open();
    server = await startTestServer({ backend: opened });
    orgId = (await server.register(ownerEmail)).accountId;
    browser = await launchBrowser();
    page = await (await desktopContext(browser)).newPage();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await opened?.cleanup();
  });

  const shoot = async (name: string) => {
    if (!SCREENS) return;
    mkdirSync(SCREENS, { recursive: true });
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await page.screenshot({ path: join(SCREENS, `${name}-${width}.png`), fullPage: true });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  };

  it('lets the owner invite people and change roles, and shows a viewer no management', async () => {
    await signIn(page, server.url, ownerEmail, PASSWORD);
    await heading(page, 'Overview');
    await page.getByRole('link', { name: 'Members' }).click();
    await heading(page, 'Members');
    await page.getByLabel('E-mail').fill(viewerEmail);
    await page.getByLabel('Role', { exact: true }).selectOption('viewer');
    await page.getByRole('button', { name: 'Invite' }).click();
    const notice = page.getByText(/Its single-use token: inv-/);
    await notice.waitFor();
    const token = /(inv-\S+)/.exec((await notice.textContent()) ?? '')![1]!;
    const accepted = await server.call('POST', '/api/invitations/accept', {
      body: { token, email: viewerEmail, password: PASSWORD },
    });
    assert.equal(accepted.status, 200);
    await page.reload();
    await page.getByText(viewerEmail).first().waitFor();
    await Promise.all([
      page.waitForResponse((r) => r.url().includes('/members/') && r.request().method() === 'PATCH'),
      page.getByLabel(`Role of ${viewerEmail}`).selectOption('developer'),
    ]);
    await Promise.all([
      page.waitForResponse((r) => r.url().includes('/members/') && r.request().method() === 'PATCH'),
      page.getByLabel(`Role of ${viewerEmail}`).selectOption('viewer'),
    ]);
    await shoot('members-owner');

    await page.context().clearCookies();
    await signIn(page, server.url, viewerEmail, PASSWORD);
    await heading(page, 'Overview');
    await page.goto(`${server.url}/members`);
    await heading(page, 'Members');
    await page.getByLabel('Acting in').selectOption(orgId);
    await page.locator('td', { hasText: ownerEmail }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Invite' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Remove' }).count(), 0);
    await shoot('members-viewer');
    // The page hides what the API refuses: a viewer creating a key in the organization gets 403.
    const refused = await page.evaluate(async (organization) => {
      const session = (await (await fetch('/api/auth/session')).json()) as { csrf_token: string };
      const response = await fetch('/api/keys', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-csrf-token': session.csrf_token,
          'x-tollgate-organization': organization,
        },
        body: JSON.stringify({ name: 'nope' }),
      });
      return response.status;
    }, orgId);
    assert.equal(refused, 403);
  });
});
