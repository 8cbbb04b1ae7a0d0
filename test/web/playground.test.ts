// The dashboard's playground driven in a real browser: a trial account at its key cap chats on its session,
// copies the request as curl and runs it with its key, and compares two models side by side.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
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
  TIMEOUT,
} from '../helpers/browser.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const run = promisify(execFile);
const PASSWORD = 'correct horse battery';
const missing = browserMissing();
const sqlite = BACKENDS.find((backend) => backend.name === 'sqlite');

describe(
  'the playground in a real browser',
  { skip: missing ?? (sqlite ? false : 'sqlite deselected') },
  () => {
    let opened: OpenedBackend;
    let server: TestServer;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    let key = '';

    before(async () => {
      opened = await sqlite!.open();
      server = await startTestServer({ backend: opened });
      const email = `player-${Date.now()}@example.com`;
      ({ key } = await server.register(email));
      for (const name of ['second', 'third'])
        assert.equal((await server.call('POST', '/api/keys', { key, body: { name } })).status, 201);
      const capped = await server.call('POST', '/api/keys', { key, body: { name: 'fourth' } });
      assert.notEqual(capped.status, 201, 'the trial account is at its cap of three keys');
      browser = await launchBrowser();
      context = await desktopContext(browser);
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
      page = await context.newPage();
      await signIn(page, server.url, email, PASSWORD);
      await heading(page, 'Overview');
    });
    after(async () => {
      await browser?.close();
      await server?.close();
      await opened?.cleanup();
    });

    it('chats with model-a without a key, shows tokens and cost, and its curl runs with a key', async () => {
      await page.goto(`${server.url}/playground`);
      await heading(page, 'Playground');
      await page.getByLabel('Model', { exact: true }).selectOption('model-a');
      await page.getByLabel('System prompt').fill("You answer briefly. Don't ramble.");
      await page.getByLabel('Temperature').fill('0.5');
      await page.getByLabel('Max tokens').fill('40');
      await page.getByLabel('Message').fill('Say hello');
      await page.getByRole('button', { name: 'Send' }).click();
      const meter = page.getByRole('status', { name: 'Tokens and cost of model-a' });
      await meter.filter({ hasText: /Tokens: \d+ in, \d+ out( \(\d+ reasoning\))?; cost USD \d/ }).waitFor();
      const answer = await page.getByLabel('Answer of model-a').innerText();
      assert.ok(answer.length > 'model-a'.length, answer);
      // A second turn carries the first answer: the conversation lives in the page.
      await page.getByLabel('Message').fill('And again');
      await page.getByRole('button', { name: 'Send' }).click();
      await page
        .getByLabel('Answer of model-a')
        .nth(1)
        .getByRole('status')
        .filter({ hasText: /cost USD \d/ })
        .waitFor();

      await page.getByRole('button', { name: 'Copy curl' }).click();
      await page.getByRole('button', { name: 'Copied' }).waitFor();
      const curl = await page.evaluate(() =>
        (
          globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }
        ).navigator.clipboard.readText(),
      );
      assert.match(curl, new RegExp(`^curl '${server.url}/v1/chat/completions'`));
      assert.match(curl, /\$TOLLGATE_API_KEY/);
      assert.match(curl, /"temperature": 0\.5/);
      assert.match(curl, /"role": "assistant"/, 'the second request carries the first answer');
      const { stdout } = await run('bash', ['-c', curl.replace('$TOLLGATE_API_KEY', key)], {
        timeout: TIMEOUT,
      });
      assert.match(stdout, /"object":"chat\.completion\.chunk"/);
      assert.match(stdout, /"usage":\{/);
      assert.match(stdout, /data: \[DONE\]/);

      for (const language of ['Python', 'TypeScript']) {
        await page.getByRole('button', { name: language, exact: true }).click();
        const code = await page.getByLabel(`The request to model-a as ${language}`).innerText();
        assert.ok(code.includes(`${server.url}/v1`), code);
        assert.match(code, /TOLLGATE_API_KEY/);
      }

      // Billed to the account under the playground, which is not a key: still three keys.
      const keys = await server.call('GET', '/api/keys', { key });
      assert.equal(keys.body.data.length, 3);
      const usage = await server.call('GET', '/api/usage?group_by=key', { key });
      assert.ok(usage.body.data.some((row: { key_id: string }) => row.key_id.startsWith('playground_')));
    });

    it('compares two models side by side on one conversation, both streamed; Clear empties it', async () => {
      await page.getByRole('button', { name: 'Clear' }).click();
      await page.getByText('No messages yet.').waitFor();
      await page.getByLabel('Compare two models side by side').check();
      await page.getByLabel('Model 1', { exact: true }).selectOption('model-a');
      await page.getByLabel('Model 2', { exact: true }).selectOption('model-b');
      await page.getByLabel('Message').fill('Which one are you?');
      await page.getByRole('button', { name: 'Send' }).click();
      for (const model of ['model-a', 'model-b'])
        await page
          .getByRole('status', { name: `Tokens and cost of ${model}` })
          .filter({ hasText: /cost USD \d/ })
          .waitFor();
      const a = await page.getByLabel('Answer of model-a').innerText();
      const b = await page.getByLabel('Answer of model-b').innerText();
      assert.notEqual(a, b);
      const requests = page.getByLabel(/^The request to model-[ab] as curl$/);
      assert.equal(await requests.count(), 2);
      for (const code of await requests.allInnerTexts())
        assert.match(code, /"stream": true/, 'both streamed');
      // The conversation in view at both widths: no serious axe finding, nothing scrolls sideways.
      for (const size of [
        { width: 1280, height: 900 },
        { width: 360, height: 780 },
      ]) {
        await page.setViewportSize(size);
        assert.deepEqual(await axeFindings(page), [], `the playground in use at ${size.width} px`);
        assert.ok((await sidewaysOverflow(page)) <= 0, `the playground scrolls sideways at ${size.width} px`);
        if (SCREENS) {
          mkdirSync(SCREENS, { recursive: true });
          await page.screenshot({
            path: join(SCREENS, `playground-compare-${size.width}.png`),
            fullPage: true,
          });
        }
      }
      await page.setViewportSize({ width: 1280, height: 900 });
      await page.getByRole('button', { name: 'Clear' }).click();
      await page.getByText('No messages yet.').waitFor();
      assert.equal(await page.evaluate(() => sessionStorage.getItem('tollgate.playground')), null);
    });
  },
);
