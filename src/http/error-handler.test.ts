import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import { GatewayError } from '../core/gateway-error.ts';
import { StoreUnavailableError } from '../store/db.ts';
import { errorHeaders, installErrorHandling, isLogged, RouteTable, toGatewayError } from './error-handler.ts';

describe('toGatewayError (anything thrown → the spec error)', () => {
  it('passes a GatewayError through unchanged', () => {
    const error = new GatewayError('forbidden', 'no');
    assert.equal(toGatewayError(error), error);
  });

  it('a schema validation failure is 400 invalid_request naming the field', () => {
    const error = Object.assign(new Error('bad'), {
      validation: [{ instancePath: '/plan/id', keyword: 'type', message: 'must be string', params: {} }],
      validationContext: 'body',
    });
    const mapped = toGatewayError(error);
    assert.equal(mapped.code, 'invalid_request');
    assert.equal(mapped.status, 400);
    assert.equal(mapped.message, 'body.plan.id must be string');
    assert.equal(mapped.param, 'plan.id');
    assert.equal(mapped.cause, error);

    const unknown = Object.assign(new Error('bad'), {
      validation: [
        { instancePath: '', keyword: 'additionalProperties', params: { additionalProperty: 'x' } },
      ],
      validationContext: 'querystring',
    });
    assert.equal(toGatewayError(unknown).message, 'querystring has unknown field x');
    const bare = Object.assign(new Error('bad'), { validation: [] });
    assert.equal(toGatewayError(bare).message, 'body is invalid');
    assert.equal(toGatewayError(bare).param, null);
    const noMessage = Object.assign(new Error('bad'), {
      validation: [{ instancePath: '/a', keyword: 'x', params: {} }],
    });
    assert.equal(toGatewayError(noMessage).message, 'body.a is invalid');
  });

  it('a body over the limit is 413 with code invalid_request', () => {
    const mapped = toGatewayError(
      Object.assign(new Error('big'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 }),
    );
    assert.equal(mapped.status, 413);
    assert.equal(mapped.code, 'invalid_request');
    assert.equal(mapped.type, 'invalid_request_error');
    assert.equal(mapped.message, 'request body is too large');
  });

  it('other 4xx keep their status as invalid_request', () => {
    const media = toGatewayError(
      Object.assign(new Error('x'), { code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE', statusCode: 415 }),
    );
    assert.equal(media.status, 415);
    assert.equal(media.code, 'invalid_request');
    assert.equal(media.message, 'Content-Type must be application/json');
    const json = toGatewayError(Object.assign(new Error('Unexpected token'), { statusCode: 400 }));
    assert.equal(json.status, 400);
    assert.equal(json.message, 'Unexpected token');
    assert.equal(toGatewayError({ statusCode: 400 }).message, 'bad request');
    assert.equal(toGatewayError(Object.assign(new Error('x'), { statusCode: 499 })).status, 499);
  });

  it('an unreachable database is 503 service_unavailable with a 2 s Retry-After, its detail kept out', () => {
    const down = new StoreUnavailableError(new Error('connect ECONNREFUSED 10.0.0.5:5432'));
    const mapped = toGatewayError(down);
    assert.equal(mapped.status, 503);
    assert.equal(mapped.code, 'service_unavailable');
    assert.equal(mapped.type, 'api_error');
    assert.equal(mapped.retryAfterMs, 2000);
    assert.equal(mapped.cause, down);
    assert.match(mapped.message, /temporarily unavailable/);
    assert.doesNotMatch(mapped.message, /10\.0\.0\.5|ECONNREFUSED/);
    assert.equal(errorHeaders(mapped)['retry-after'], '2');
  });

  it('everything else is 500 internal_error, without the internal message', () => {
    for (const thrown of [
      new Error('secret detail'),
      Object.assign(new Error('secret detail'), { statusCode: 500 }),
      Object.assign(new Error('secret detail'), { statusCode: 399 }),
      'a string',
    ]) {
      const mapped = toGatewayError(thrown);
      assert.equal(mapped.cause, thrown);
      assert.equal(mapped.status, 500);
      assert.equal(mapped.code, 'internal_error');
      assert.equal(mapped.type, 'api_error');
      assert.equal(mapped.message, 'internal error');
    }
  });
});

describe('errorHeaders', () => {
  it('adds Retry-After in whole seconds (at least 1) and Retry-After-Ms', () => {
    assert.deepEqual(
      errorHeaders(
        new GatewayError('rate_limit_exceeded', 'x', {
          retryAfterMs: 1500,
          rateLimits: { requests: { limit: 10, remaining: 0, resetMs: 1500 } },
        }),
      ),
      {
        'x-ratelimit-limit-requests': '10',
        'x-ratelimit-remaining-requests': '0',
        'x-ratelimit-reset-requests': '1.5s',
        'retry-after': '2',
        'retry-after-ms': '1500',
      },
    );
    assert.equal(
      errorHeaders(new GatewayError('rate_limit_exceeded', 'x', { retryAfterMs: 2000 }))['retry-after'],
      '2',
    );
    assert.equal(
      errorHeaders(new GatewayError('rate_limit_exceeded', 'x', { retryAfterMs: 1 }))['retry-after'],
      '1',
    );
    assert.equal(
      errorHeaders(new GatewayError('rate_limit_exceeded', 'x', { retryAfterMs: 0 }))['retry-after'],
      '1',
    );
    assert.equal(
      errorHeaders(new GatewayError('rate_limit_exceeded', 'x', { retryAfterMs: 0.2 }))['retry-after-ms'],
      '1',
    );
    assert.equal(
      errorHeaders(new GatewayError('rate_limit_exceeded', 'x', { retryAfterMs: -5 }))['retry-after-ms'],
      '0',
    );
  });

  it('has only the rate-limit headers of a refusal without a delay', () => {
    const rateLimits = { tokens: { limit: 100, remaining: 40, resetMs: 20 } };
    assert.deepEqual(errorHeaders(new GatewayError('payment_required', 'x', { rateLimits })), {
      'x-ratelimit-limit-tokens': '100',
      'x-ratelimit-remaining-tokens': '40',
      'x-ratelimit-reset-tokens': '20ms',
    });
    assert.deepEqual(errorHeaders(new GatewayError('forbidden', 'x')), {});
  });
});

describe('isLogged', () => {
  it('logs server errors but not 503s (their cause is logged once per outage) nor client errors', () => {
    assert.equal(isLogged(new GatewayError('internal_error', 'x')), true);
    assert.equal(isLogged(new GatewayError('provider_error', 'x')), true);
    assert.equal(isLogged(new GatewayError('service_unavailable', 'x')), false);
    assert.equal(isLogged(new GatewayError('rate_limit_exceeded', 'x')), false);
    assert.equal(isLogged(new GatewayError('invalid_request', 'x', { status: 499 })), false);
    assert.equal(isLogged(new GatewayError('invalid_request', 'x', { status: 500 })), true);
  });
});

describe('RouteTable', () => {
  it('matches parameters, wildcards and a trailing slash, and lists each method once', () => {
    const routes = new RouteTable();
    routes.add('/api/keys/:id', 'DELETE');
    routes.add('/api/keys/:id', ['GET', 'DELETE']);
    routes.add('/static/*', 'GET');
    assert.deepEqual(routes.methodsFor('/api/keys/k_1'), ['DELETE', 'GET']);
    assert.deepEqual(routes.methodsFor('/api/keys/k_1/'), ['DELETE', 'GET']);
    assert.deepEqual(routes.methodsFor('/api/keys/k_1/x'), []);
    assert.deepEqual(routes.methodsFor('/api/keys'), []);
    assert.deepEqual(routes.methodsFor('/x/api/keys/k_1'), []);
    assert.deepEqual(routes.methodsFor('/static/a/b.css'), ['GET']);
  });
});

interface ErrorBody {
  error: { code: string; type: string; message: string };
}
const errorOf = (response: { json(): unknown }): ErrorBody['error'] => (response.json() as ErrorBody).error;

describe('installErrorHandling (in-process, no port)', () => {
  const logs: { level: number; msg: string; err?: { message: string } }[] = [];
  async function app() {
    const routes = new RouteTable();
    // Typed as Fastify's logger so the instance keeps Fastify's default generics (as src/app.ts does).
    const loggerInstance: FastifyBaseLogger = pino(
      { level: 'info' },
      { write: (line: string) => void logs.push(JSON.parse(line) as (typeof logs)[number]) },
    );
    const instance = Fastify({ loggerInstance, disableRequestLogging: true });
    installErrorHandling(instance, routes);
    routes.add('/things/:id', ['GET', 'DELETE']);
    instance.delete('/things/:id', async () => ({}));
    instance.get('/things/:id', async (request) => {
      const id = (request.params as { id: string }).id;
      if (id === 'limited')
        throw new GatewayError('rate_limit_exceeded', 'slow down', { retryAfterMs: 3000 });
      if (id === 'boom') throw new Error('database password is hunter2');
      return { id };
    });
    await instance.ready();
    return instance;
  }

  it('answers thrown errors with the spec body, status and Retry-After', async () => {
    const instance = await app();
    const limited = await instance.inject({ method: 'GET', url: '/things/limited' });
    assert.equal(limited.statusCode, 429);
    assert.equal(limited.headers['retry-after'], '3');
    assert.match(String(limited.headers['content-type']), /^application\/json/);
    const body = { error: errorOf(limited) };
    assert.equal(body.error.code, 'rate_limit_exceeded');
    assert.equal(body.error.type, 'rate_limit_error');
    assert.equal(body.error.message, 'slow down');

    const errorsBefore = logs.filter((line) => line.level >= 50).length;
    assert.equal(errorsBefore, 0, 'a 429 is not logged as a failure');
    const boom = await instance.inject({ method: 'GET', url: '/things/boom' });
    const failures = logs.filter((line) => line.level >= 50);
    assert.equal(failures.length, 1, 'a 500 is logged');
    assert.equal(failures[0]?.msg, 'request failed');
    assert.equal(failures[0]?.err?.message, 'database password is hunter2');
    assert.equal(boom.statusCode, 500);
    assert.equal(errorOf(boom).code, 'internal_error');
    assert.equal(errorOf(boom).type, 'api_error');
    assert.doesNotMatch(boom.body, /hunter2/);
    await instance.close();
  });

  it('405 with Allow for a known path, 404 not_found otherwise', async () => {
    const instance = await app();
    const wrong = await instance.inject({ method: 'POST', url: '/things/1?x=1' });
    assert.equal(wrong.statusCode, 405);
    assert.equal(wrong.headers['allow'], 'GET, DELETE');
    assert.equal(errorOf(wrong).code, 'method_not_allowed');
    assert.equal(errorOf(wrong).message, 'POST is not allowed on /things/1');
    const missing = await instance.inject({ method: 'GET', url: '/nothing?q=1' });
    assert.equal(missing.statusCode, 404);
    assert.equal(errorOf(missing).code, 'not_found');
    assert.equal(errorOf(missing).type, 'invalid_request_error');
    assert.equal(errorOf(missing).message, 'no route GET /nothing');
    assert.equal(missing.headers['allow'], undefined);
    await instance.close();
  });
});
