// What a client sees, checked against the spec's text: the raw SSE bytes, the chunk ids, the error object's
// code and type for every status, both sides of every parameter range, the message cap, per-key limits.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { connectRedis } from '../src/composition/connect-redis.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { createTestClock } from './helpers/clock.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';

const backend = BACKENDS[0]!;
const DAY = 86_400_000;
const USER = [{ role: 'user', content: 'x' }];

/** The spec's error object: one key `error` with string code, message and type (H3 may add `param`). */
function expectError(
  response: { status: number; body: any },
  status: number,
  code: string,
  type: string,
): void {
  assert.equal(response.status, status, JSON.stringify(response.body));
  assert.equal(typeof response.body, 'object');
  assert.deepEqual(Object.keys(response.body), ['error']);
  assert.equal(response.body.error.code, code);
  assert.equal(response.body.error.type, type);
  assert.equal(typeof response.body.error.message, 'string');
  assert.ok(response.body.error.message.length > 0);
}

/** Raw SSE: the events of a stream exactly as bytes on the wire, split at blank lines. */
async function rawStream(url: string, key: string, body: Record<string, unknown>) {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  const text = await response.text();
  return { response, text };
}

describe('what a client sees (raw wire)', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let key: string;
  const time = createTestClock();

  before(async () => {
    opened = await backend.open();
    server = await startTestServer({
      backend: opened,
      clock: time.clock,
      yaml: { simulator: { chunk_interval_ms: 0, first_token_ms: 0 } },
    });
    const registered = await server.registerOn('pro');
    key = registered.key;
  });
  after(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  it('a stream is SSE data events of chunks sharing one id, and its bytes end in data: [DONE] and a blank line', async () => {
    for (const extra of [{}, { stream_options: { include_usage: true } }]) {
      const { response, text } = await rawStream(server.url, key, {
        model: 'model-b',
        messages: [{ role: 'user', content: 'Stream please' }],
        ...extra,
      });
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^text\/event-stream/);
      assert.ok(text.endsWith('data: [DONE]\n\n'), `the stream ends with ${JSON.stringify(text.slice(-40))}`);
      assert.equal(
        text.indexOf('data: [DONE]'),
        text.length - 'data: [DONE]\n\n'.length,
        '[DONE] only once, last',
      );
      const events = text.slice(0, -2).split('\n\n');
      const chunks = events.slice(0, -1).map((event) => {
        assert.match(event, /^data: \{/, 'each event is one data line with a chunk');
        assert.equal(event.includes('\n'), false);
        return JSON.parse(event.slice('data: '.length));
      });
      assert.ok(chunks.length >= 3, `got ${chunks.length} chunks`);
      const id = chunks[0].id;
      assert.equal(typeof id, 'string');
      assert.ok(id.length > 0);
      let content = '';
      for (const chunk of chunks) {
        assert.equal(chunk.id, id, 'every chunk carries the completion id');
        assert.equal(chunk.object, 'chat.completion.chunk');
        assert.equal(chunk.model, 'model-b');
        assert.ok(Array.isArray(chunk.choices));
        for (const choice of chunk.choices)
          if (typeof choice.delta?.content === 'string') content += choice.delta.content;
      }
      assert.ok(content.length > 0, 'the chunks carry text');
      const withUsage = chunks.filter((chunk) => chunk.usage);
      assert.equal(withUsage.length, 'stream_options' in extra ? 1 : 0);
    }
  });

  it('every error status carries its spec code and type', async () => {
    const chat = (body: unknown, headers: Record<string, string> = { authorization: `Bearer ${key}` }) =>
      server.call('POST', '/v1/chat/completions', { body, headers });

    expectError(
      await chat({ model: 'model-b', messages: [] }),
      400,
      'invalid_request',
      'invalid_request_error',
    );
    expectError(
      await chat({ model: 'model-b', messages: USER }, {}),
      401,
      'unauthorized',
      'authentication_error',
    );
    expectError(
      await chat(
        { model: 'model-b', messages: USER },
        { authorization: 'Bearer tg-nobody-has-this-key-00000000' },
      ),
      401,
      'unauthorized',
      'authentication_error',
    );
    expectError(
      await chat({ model: 'model-zz', messages: USER }),
      404,
      'model_not_found',
      'invalid_request_error',
    );

    // 403: a revoked key, and a suspended account.
    const other = await server.register();
    const second = await server.call('POST', '/api/keys', { key: other.key, body: { name: 'second' } });
    await server.call('DELETE', `/api/keys/${second.body.id}`, { key: other.key });
    expectError(
      await chat({ model: 'model-b', messages: USER }, { authorization: `Bearer ${second.body.key}` }),
      403,
      'forbidden',
      'permission_error',
    );
    await server.call('POST', `/api/admin/accounts/${other.accountId}/suspend`, { key: ADMIN_KEY });
    expectError(
      await chat({ model: 'model-b', messages: USER }, { authorization: `Bearer ${other.key}` }),
      403,
      'forbidden',
      'permission_error',
    );

    // 402: the trial credit has expired (14 days).
    const trial = await server.register();
    time.advance(14 * DAY + 1);
    try {
      expectError(
        await chat({ model: 'model-b', messages: USER }, { authorization: `Bearer ${trial.key}` }),
        402,
        'payment_required',
        'billing_error',
      );
    } finally {
      time.advance(-(14 * DAY + 1));
    }
  });

  it('429 with Retry-After, and each key of an account has its own budget', async () => {
    const { key: first } = await server.register(); // Free Trial: 10 requests per minute
    const second = (await server.call('POST', '/api/keys', { key: first, body: { name: 'two' } })).body.key;
    const ask = (k: string) =>
      server.call('POST', '/v1/chat/completions', {
        key: k,
        body: { model: 'model-b', messages: USER, max_tokens: 1 },
      });
    for (let i = 0; i < 10; i++) assert.equal((await ask(first)).status, 200, `request ${i + 1}`);
    const limited = await ask(first);
    expectError(limited, 429, 'rate_limit_exceeded', 'rate_limit_error');
    const retryAfter = Number(limited.headers.get('retry-after'));
    assert.ok(
      Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60,
      `Retry-After ${retryAfter}`,
    );
    // The other key of the same account has its whole budget.
    for (let i = 0; i < 10; i++)
      assert.equal((await ask(second)).status, 200, `second key, request ${i + 1}`);
    expectError(await ask(second), 429, 'rate_limit_exceeded', 'rate_limit_error');
  });

  it('parameter ranges: both ends accepted, just outside refused, one rule broken per case', async () => {
    const ranges = [
      ['temperature', 0, 2],
      ['top_p', 0, 1],
      ['presence_penalty', -2, 2],
      ['frequency_penalty', -2, 2],
    ] as const;
    for (const [field, min, max] of ranges) {
      for (const value of [min, max]) {
        const accepted = await server.call('POST', '/v1/chat/completions', {
          key,
          body: { model: 'model-b', messages: USER, max_tokens: 1, [field]: value },
        });
        assert.equal(accepted.status, 200, `${field} = ${value}: ${JSON.stringify(accepted.body)}`);
      }
      for (const value of [min - 0.01, max + 0.01]) {
        const refused = await server.call('POST', '/v1/chat/completions', {
          key,
          body: { model: 'model-b', messages: USER, max_tokens: 1, [field]: value },
        });
        expectError(refused, 400, 'invalid_request', 'invalid_request_error');
        assert.match(refused.body.error.message, new RegExp(field));
      }
    }
  });

  it('2,048 messages are accepted, 2,049 refused', async () => {
    const many = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'x' }));
    const accepted = await server.call('POST', '/v1/chat/completions', {
      key,
      body: { model: 'model-b', messages: [...many(2047), { role: 'user', content: 'last' }], max_tokens: 1 },
    });
    assert.equal(accepted.status, 200, JSON.stringify(accepted.body).slice(0, 200));
    const refused = await server.call('POST', '/v1/chat/completions', {
      key,
      body: { model: 'model-b', messages: many(2049), max_tokens: 1 },
    });
    expectError(refused, 400, 'invalid_request', 'invalid_request_error');
    assert.match(refused.body.error.message, /messages/);
  });
});

describe('server-side failures as a client sees them', () => {
  let opened: OpenedBackend;
  before(async () => {
    opened = await backend.open();
  });
  after(async () => {
    await opened?.cleanup();
  });

  it('502 provider_error when the upstream cannot be reached', async () => {
    const server = await startTestServer({
      backend: opened,
      yaml: {
        providers: [{ id: 'dead', type: 'openai', base_url: 'http://127.0.0.1:1' }],
        routing: { max_attempts: 1, retry_base_ms: 1 },
        models: { 'model-b': { deployments: [{ provider: 'dead', model: 'up-b' }] } },
      },
    });
    try {
      const { key } = await server.register();
      const response = await server.call('POST', '/v1/chat/completions', {
        key,
        body: { model: 'model-b', messages: USER },
      });
      expectError(response, 502, 'provider_error', 'api_error');
    } finally {
      await server.close();
    }
  });

  it('503 service_unavailable when the shared limiter is unreachable and the policy is deny', async () => {
    // The account is made first (sign-up itself goes through the limiter), on an instance with local limits.
    const plain = await startTestServer({ backend: opened });
    const { key } = await plain.register();
    await plain.close();
    const silent = pino({ level: 'silent' });
    const redis = connectRedis('redis://127.0.0.1:1', 'deny', silent, `tgtest${process.pid}deny`);
    const server = await startTestServer({
      backend: opened,
      extra: { limiter: redis.limiter, bus: redis.bus },
    });
    try {
      const response = await server.call('POST', '/v1/chat/completions', {
        key,
        body: { model: 'model-b', messages: USER },
      });
      expectError(response, 503, 'service_unavailable', 'api_error');
      assert.ok(Number(response.headers.get('retry-after')) >= 1, 'a 503 says when to retry');
    } finally {
      await server.close();
    }
  });

  it('500 internal_error when the database fails under a request, without the internal detail', async () => {
    const server = await startTestServer({ backend: opened });
    try {
      const { key } = await server.register();
      server.services.cache.clear();
      await opened.db.run('ALTER TABLE api_keys RENAME TO api_keys_gone');
      try {
        const response = await server.call('POST', '/v1/chat/completions', {
          key,
          body: { model: 'model-b', messages: USER },
        });
        expectError(response, 500, 'internal_error', 'api_error');
        assert.doesNotMatch(response.body.error.message, /api_keys|SQLITE|no such table/i);
      } finally {
        await opened.db.run('ALTER TABLE api_keys_gone RENAME TO api_keys');
      }
    } finally {
      await server.close();
    }
  });
});
