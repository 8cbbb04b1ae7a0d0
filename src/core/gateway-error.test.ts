import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from './gateway-error.ts';

// The spec's error table, with the OpenAI-convention types DESIGN.md picks for the codes the spec leaves open.
const TABLE = [
  ['invalid_request', 400, 'invalid_request_error'],
  ['unauthorized', 401, 'authentication_error'],
  ['payment_required', 402, 'billing_error'],
  ['forbidden', 403, 'permission_error'],
  ['model_not_found', 404, 'invalid_request_error'],
  ['not_found', 404, 'invalid_request_error'],
  ['method_not_allowed', 405, 'invalid_request_error'],
  ['conflict', 409, 'invalid_request_error'],
  ['rate_limit_exceeded', 429, 'rate_limit_error'],
  ['internal_error', 500, 'api_error'],
  ['provider_error', 502, 'api_error'],
  ['service_unavailable', 503, 'api_error'],
] as const;

describe('GatewayError', () => {
  for (const [code, status, type] of TABLE) {
    it(`${code} is ${status} ${type}`, () => {
      const error = new GatewayError(code, 'what went wrong');
      assert.equal(error.code, code);
      assert.equal(error.status, status);
      assert.equal(error.type, type);
      assert.equal(error.message, 'what went wrong');
      const body = error.toBody();
      assert.deepEqual(Object.keys(body), ['error']);
      assert.equal(body.error.code, code);
      assert.equal(body.error.type, type);
      assert.equal(body.error.message, 'what went wrong');
    });
  }

  it('keeps a status override, a delay, rate limits and a cause', () => {
    const cause = new Error('root');
    const error = new GatewayError('invalid_request', 'too big', {
      status: 413,
      retryAfterMs: 1500,
      rateLimits: { requests: { limit: 10, remaining: 0, resetMs: 6000 } },
      cause,
    });
    assert.equal(error.status, 413);
    assert.equal(error.type, 'invalid_request_error');
    assert.equal(error.retryAfterMs, 1500);
    assert.deepEqual(error.rateLimits, { requests: { limit: 10, remaining: 0, resetMs: 6000 } });
    assert.equal(error.cause, cause);
    assert.equal(error.name, 'GatewayError');
    assert.ok(error instanceof Error);
  });

  it('has no delay, no rate limits and no cause unless given', () => {
    const error = new GatewayError('internal_error', 'x');
    assert.equal(error.retryAfterMs, undefined);
    assert.equal(error.rateLimits, undefined);
    assert.equal('cause' in error, false);
  });
});
