import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { weakSecretReason } from './secret-strength.ts';

describe('weakSecretReason', () => {
  it('accepts what openssl rand makes', () => {
    for (let i = 0; i < 20; i++) {
      assert.equal(weakSecretReason(randomBytes(32).toString('base64')), undefined);
      assert.equal(weakSecretReason(randomBytes(16).toString('hex')), undefined);
      assert.equal(weakSecretReason(`tg-admin-${randomBytes(24).toString('base64url')}`), undefined);
    }
  });

  it('refuses short, repeated and low-entropy keys, saying why', () => {
    assert.match(weakSecretReason('admin')!, /5 characters; at least 32/);
    assert.match(weakSecretReason('changeme-changeme-changeme-changeme')!, /repeats a run/);
    assert.match(weakSecretReason('0123456789abcdef0123456789abcdef')!, /repeats a run/);
    assert.match(weakSecretReason('a'.repeat(64))!, /repeats a run/);
    assert.match(weakSecretReason('abcabdabeacbacdacebcabcdbceadcbadcebdbcd')!, /bits of entropy/);
  });
});
