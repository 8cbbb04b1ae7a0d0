import assert from 'node:assert/strict';

/** Polls `check` every 25 ms until it holds; fails naming `what` after about ten seconds. */
export async function until(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.fail(`timed out waiting for ${what}`);
}
