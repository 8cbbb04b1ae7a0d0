import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { signPayload, verifySignature } from './sign-payload.ts';

// The spec: `sha256=` + lowercase hex HMAC-SHA256 of the payload text, keyed with the shared secret.
const expected = (payload: string, secret: string): string =>
  'sha256=' +
  createHmac('sha256', Buffer.from(secret, 'utf8')).update(Buffer.from(payload, 'utf8')).digest('hex');

describe('webhook signing', () => {
  const payload = '{"event_type":"payment.success","order_id":"ord_1","amount":9.99}';
  const secret = 'whsec_test_0123456789';

  it('signs as the spec defines (key = secret, message = payload)', () => {
    assert.equal(signPayload(payload, secret), expected(payload, secret));
    assert.notEqual(signPayload(payload, secret), expected(secret, payload));
    assert.match(signPayload(payload, secret), /^sha256=[0-9a-f]{64}$/);
  });

  it('a known vector (RFC 4231 test case 2)', () => {
    assert.equal(
      signPayload('what do ya want for nothing?', 'Jefe'),
      'sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    );
  });

  it('verifies only the exact header', () => {
    const header = expected(payload, secret);
    assert.equal(verifySignature(payload, secret, header), true);
    assert.equal(verifySignature(payload, secret, undefined), false);
    assert.equal(verifySignature(payload, secret, ''), false);
    assert.equal(verifySignature(payload, 'another-secret', header), false);
    assert.equal(verifySignature(payload + ' ', secret, header), false);
    assert.equal(verifySignature(payload, secret, header.slice(0, -1)), false);
    assert.equal(
      verifySignature(payload, secret, header.slice(0, -1) + (header.endsWith('0') ? '1' : '0')),
      false,
    );
    assert.equal(verifySignature(payload, secret, header.slice('sha256='.length)), false);
  });
});
