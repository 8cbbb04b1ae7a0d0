import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

// The dashboard's types are the server's response schemas: renaming a field in a schema must fail the web app's
// typecheck where the app reads it. Checked on a copy (the web app, the schema modules it imports, the same
// node_modules) with one field renamed.
describe('the web app types follow the response schemas', () => {
  const copy = mkdtempSync(join(tmpdir(), 'tollgate-contract-'));
  after(() => rmSync(copy, { recursive: true, force: true }));

  it('renaming `email` in the account schema breaks `tsc -p web` where the app reads it', () => {
    cpSync(join(ROOT, 'web/src'), join(copy, 'web/src'), { recursive: true });
    for (const file of ['web/tsconfig.json', 'web/vite.config.ts', 'src/http/dashboard-pages.ts'])
      cpSync(join(ROOT, file), join(copy, file));
    cpSync(join(ROOT, 'src/http/schemas'), join(copy, 'src/http/schemas'), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');

    const schemas = join(copy, 'src/http/schemas/api.ts');
    const original = readFileSync(schemas, 'utf8');
    const renamed = original
      .replace(
        "required: ['id', 'email', 'email_verified',",
        "required: ['id', 'email_address', 'email_verified',",
      )
      .replace(/(\n\s+id: string,\n\s+)email: string,/, '$1email_address: string,');
    assert.notEqual(renamed, original);
    assert.equal(renamed.split('email_address').length - 1, 2, 'the account schema names the field twice');
    writeFileSync(schemas, renamed);

    const tsc = spawnSync(
      process.execPath,
      [join(ROOT, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', join(copy, 'web')],
      { encoding: 'utf8', cwd: copy },
    );
    assert.notEqual(tsc.status, 0, 'tsc -p web passed with the field renamed');
    const errors = tsc.stdout.split('\n').filter((line) => /error TS\d+/.test(line));
    assert.ok(errors.length > 0, tsc.stdout + tsc.stderr);
    // Every error is the renamed field, read by the app's pages: the copy is otherwise sound.
    for (const line of errors) assert.match(line, /^web\/src\/.*Property 'email' does not exist/);
    assert.ok(errors.some((line) => line.startsWith('web/src/App.tsx')));
  });
});
