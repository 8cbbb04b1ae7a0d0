import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { errors as undiciErrors } from 'undici';
import { toProviderError } from './upstream-http.ts';

/** A transport error as Node raises it: an Error with a `code`. */
function transportError(code: string): Error {
  return Object.assign(new Error(code), { code });
}

describe('toProviderError: whether the upstream was reached', () => {
  it('refused, unresolvable and connect-timed-out calls never reached the upstream', () => {
    for (const code of ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH'])
      assert.equal(toProviderError(transportError(code)).beforeSend, true, code);
    assert.equal(toProviderError(new undiciErrors.ConnectTimeoutError()).beforeSend, true);
  });

  it('a reset or a time-out after sending may be the request’s doing, and is not marked', () => {
    assert.equal(toProviderError(transportError('ECONNRESET')).beforeSend, false);
    assert.equal(toProviderError(new undiciErrors.HeadersTimeoutError()).beforeSend, false);
    assert.equal(toProviderError(new undiciErrors.BodyTimeoutError()).beforeSend, false);
  });
});
