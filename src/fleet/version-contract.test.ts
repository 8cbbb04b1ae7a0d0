import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { FleetLease } from '../store/fleet-repo.ts';
import { splitStatements } from '../store/migrate.ts';
import { createSecretBox, gatedSecretBox } from '../shared/secret-box.ts';
import { compareReleases, RELEASE_VERSION } from './release.ts';
import { judgeFleet } from './version-contract.ts';

const self = { instanceId: 'inst_me', release: '0.3.0', oldestPeer: '0.2.0' };
const lease = (
  id: string,
  release: string | null,
  oldestPeer: string | null,
  reads: string[] = [],
): FleetLease => ({
  instanceId: id,
  heartbeatAt: 0,
  expiresAt: 1,
  release,
  schema: null,
  oldestPeer,
  reads,
});

describe('the version contract', () => {
  it('states the release the package is published as', () => {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    assert.equal(RELEASE_VERSION, manifest.version);
  });

  it('compares releases by number, not by text', () => {
    assert.ok(compareReleases('0.10.0', '0.9.0') > 0);
    assert.ok(compareReleases('0.2.0', '0.2.1') < 0);
    assert.equal(compareReleases('1.0.0', '1.0.0'), 0);
  });

  it('is ready beside releases it runs beside, and among its own', () => {
    const verdict = judgeFleet(
      self,
      [lease('inst_me', '0.3.0', '0.2.0'), lease('b', '0.2.0', '0.1.0')],
      [],
      '0.2.0',
    );
    assert.deepEqual(verdict.blockers, []);
    assert.equal(verdict.mustStop, undefined);
  });

  it('is not ready beside a release older than the oldest it runs beside, saying which', () => {
    const verdict = judgeFleet(self, [lease('old', '0.1.5', '0.1.0')], [], undefined);
    assert.equal(verdict.blockers.length, 1);
    assert.match(verdict.blockers[0]!, /old runs release 0\.1\.5, older than 0\.2\.0/);
  });

  it('takes a lease without a release, or a writer without a lease, for the last release before the contract', () => {
    const beside = judgeFleet(
      { ...self, oldestPeer: '0.1.0' },
      [lease('pre', null, null)],
      ['redis-only'],
      undefined,
    );
    assert.deepEqual(beside.blockers, []);
    assert.deepEqual(beside.preContract.sort(), ['pre', 'redis-only']);
    const past = judgeFleet(self, [lease('pre', null, null)], ['redis-only'], undefined);
    assert.equal(past.blockers.length, 2, 'older than 0.2.0: neither may run beside');
  });

  it('must stop when a newer release or the schema needs a newer one', () => {
    assert.match(
      judgeFleet(self, [lease('new', '0.5.0', '0.4.0')], [], undefined).mustStop!,
      /new runs release 0\.5\.0/,
    );
    assert.match(judgeFleet(self, [], [], '0.4.0').mustStop!, /schema needs release 0\.4\.0/);
    assert.equal(judgeFleet(self, [lease('new', '0.5.0', '0.3.0')], [], '0.3.0').mustStop, undefined);
  });

  it('opens a format only when every other live instance reads it', () => {
    const format = 'secret:enc-v1:abcd';
    assert.equal(judgeFleet(self, [], [], undefined).readByAll(format), true, 'alone');
    assert.equal(
      judgeFleet(self, [lease('b', '0.3.0', '0.2.0', [format])], [], undefined).readByAll(format),
      true,
    );
    assert.equal(
      judgeFleet(self, [lease('b', '0.3.0', '0.2.0', [])], [], undefined).readByAll(format),
      false,
    );
    assert.equal(
      judgeFleet(self, [lease('b', null, null, [format])], [], undefined).readByAll(format),
      false,
    );
    assert.equal(judgeFleet(self, [], ['redis-only'], undefined).readByAll(format), false);
  });
});

describe('the sealing gate', () => {
  const box = createSecretBox({ current: 'a-secret-key-of-at-least-32-characters!!', previous: [] });
  it('stores plaintext while the gate is shut, and seals once it opens', () => {
    let open = false;
    const gated = gatedSecretBox(box, (format) => open && format === box.sealsAs);
    assert.equal(gated.seal('whsec_1'), 'whsec_1');
    assert.equal(gated.stale('whsec_1'), false, 'nothing is resealed while shut');
    open = true;
    const sealed = gated.seal('whsec_1');
    assert.match(sealed, /^enc:v1:/);
    assert.equal(gated.open(sealed), 'whsec_1');
    assert.equal(gated.stale('whsec_1'), true);
    assert.deepEqual(box.opens, [box.sealsAs]);
  });
});

describe('migration files', () => {
  it('split on statement ends, not inside a $$ body or a trigger body', () => {
    const sql = `CREATE TABLE a (x INT);
-- a comment; with a semicolon
CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE a SET x = 1;
  RETURN NULL;
END
$$;
CREATE TRIGGER t AFTER INSERT ON a BEGIN
  UPDATE a SET x = 2;
END;
CREATE TRIGGER u AFTER INSERT ON a FOR EACH ROW EXECUTE FUNCTION f();`;
    const statements = splitStatements(sql);
    assert.equal(statements.length, 4);
    assert.match(statements[1]!, /RETURN NULL;\nEND\n\$\$$/);
    assert.match(statements[2]!, /SET x = 2;\nEND$/);
    assert.match(statements[3]!, /^CREATE TRIGGER u/);
  });
});
