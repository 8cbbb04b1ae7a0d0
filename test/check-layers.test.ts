import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { checkLayers, findCycles, findUpward, importGraph } from '../scripts/check-layers.ts';

const SCRIPT = fileURLToPath(new URL('../scripts/check-layers.ts', import.meta.url));
const FLOORS = [['core'], ['store'], ['gateway'], ['main.ts']];
const roots: string[] = [];
after(() => roots.forEach((root) => rmSync(root, { recursive: true, force: true })));

/** A tiny tree laid out like src/: path → source text. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'layers-'));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

const clean = {
  'core/records.ts': 'export interface Account { id: string }\n',
  'store/accounts.ts':
    "import type { Account } from '../core/records.ts';\nexport const none: Account[] = [];\n",
  'store/accounts.test.ts': "import '../gateway/gateway.ts';\n",
  'gateway/gateway.ts': "import { none } from '../store/accounts.ts';\nexport const first = none[0];\n",
  'main.ts': "const gateway = await import('./gateway/gateway.ts');\nconsole.log(gateway);\n",
};

describe('the layering check (scripts/check-layers.ts)', () => {
  it('passes a tree whose imports all run down a floor (tests are not counted)', () => {
    assert.deepEqual(checkLayers(tree(clean), FLOORS, []), []);
  });

  it('fails on a new import cycle, naming its files', () => {
    const root = tree({
      ...clean,
      'store/accounts.ts': "import { other } from './other.ts';\nexport const none = [other];\n",
      'store/other.ts':
        "import type { none } from './accounts.ts';\nexport const other = 1 as unknown as typeof none;\n",
    });
    assert.deepEqual(findCycles(importGraph(root)), [['store/accounts.ts', 'store/other.ts']]);
    assert.deepEqual(checkLayers(root, FLOORS, []), [
      'import cycle (2 files): store/accounts.ts, store/other.ts',
    ]);
  });

  it('fails on an import up a floor, and on a room on no floor', () => {
    const root = tree({
      ...clean,
      'core/records.ts':
        "import type { first } from '../gateway/gateway.ts';\nexport type Account = typeof first;\n",
      'extra/thing.ts': 'export const thing = 1;\n',
    });
    assert.deepEqual(findUpward(importGraph(root), FLOORS), [
      'core/records.ts -> gateway/gateway.ts',
      'extra/thing.ts: room extra is on no floor',
    ]);
    // core → gateway → store → core is a cycle as well.
    assert.equal(checkLayers(root, FLOORS, []).filter((line) => line.startsWith('import cycle')).length, 1);
  });

  it('fails when a tolerated import no longer occurs', () => {
    assert.deepEqual(checkLayers(tree(clean), FLOORS, ['store/accounts.ts -> gateway/gateway.ts']), [
      'PENDING entry no longer occurs (delete it): store/accounts.ts -> gateway/gateway.ts',
    ]);
  });

  it('exits 1 on a cycle and 0 on src/ as it stands', () => {
    const root = tree({
      'core/a.ts': "import './b.ts';\n",
      'core/b.ts': "import './a.ts';\n",
    });
    const failed = spawnSync(process.execPath, [SCRIPT, root], { encoding: 'utf8' });
    assert.equal(failed.status, 1);
    assert.match(failed.stderr, /import cycle \(2 files\): core\/a\.ts, core\/b\.ts/);
    const src = spawnSync(process.execPath, [SCRIPT], { encoding: 'utf8' });
    assert.equal(src.status, 0, src.stderr);
  });
});
