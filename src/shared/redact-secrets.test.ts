import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { redactSecrets } from './redact-secrets.ts';

describe('redactSecrets', () => {
  it('hides a whole webhook secret, in base64url and in standard base64 (with + and /)', () => {
    assert.equal(
      redactSecrets('secret whsec_AbC-dEf_0123456789xyzABCDEFGHIJKLMN end'),
      'secret [redacted] end',
    );
    assert.equal(
      redactSecrets('secret whsec_Ab+/Cd9xY+0123456789/xyzABCDEFGHIJK end'),
      'secret [redacted] end',
    );
  });
});
