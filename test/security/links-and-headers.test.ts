import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, type OpenedBackend } from '../helpers/backends.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';

/** A JSON POST written with node:http, so that it can carry a Host of the caller's choosing (fetch cannot). */
function postWithHost(
  url: string,
  path: string,
  host: string,
  body: unknown,
  key?: string,
): Promise<{ status: number; body: any }> {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const outgoing = request(
      `${url}${path}`,
      {
        method: 'POST',
        headers: {
          host,
          'x-forwarded-host': host,
          'x-forwarded-proto': 'https',
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
          ...(key ? { authorization: `Bearer ${key}` } : {}),
        },
      },
      (response) => {
        let data = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (data += chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, body: JSON.parse(data || 'null') }),
        );
      },
    );
    outgoing.on('error', reject);
    outgoing.end(text);
  });
}

describe('links in mail never come from the request (no PUBLIC_URL)', () => {
  let opened: OpenedBackend;
  let server: TestServer;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    server = await startTestServer({ backend: opened, env: { TOLLGATE_TRUST_PROXY: '1' } });
  });
  after(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  it('a password-reset link starts with the listening address, whatever Host and X-Forwarded-Host say', async () => {
    const email = `reset-host-${Date.now()}@example.com`;
    await server.register(email);
    const sent = await postWithHost(server.url, '/api/auth/password-reset', 'evil.example', { email });
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    const mail = server.mails.findLast((m) => m.to === email && /reset/i.test(m.subject));
    assert.ok(mail, 'a reset mail was sent');
    assert.doesNotMatch(mail.text, /evil\.example/);
    assert.ok(mail.text.includes(`${server.url}/reset-password?token=`), mail.text);
  });

  it("a verification link (the user's resend and the operator's) starts with the listening address", async () => {
    const email = `verify-host-${Date.now()}@example.com`;
    const { key, accountId } = await server.register(email);
    const resent = await postWithHost(server.url, '/api/auth/resend-verification', 'evil.example', {}, key);
    assert.equal(resent.status, 202, JSON.stringify(resent.body));
    const mail = server.mails.findLast((m) => m.to === email && /verify-email\?token=/.test(m.text));
    assert.ok(mail, 'a verification mail was sent');
    assert.doesNotMatch(mail.text, /evil\.example/);
    assert.ok(mail.text.includes(`${server.url}/verify-email?token=`), mail.text);

    const byOperator = await postWithHost(
      server.url,
      `/api/admin/accounts/${accountId}/resend-verification`,
      'evil.example',
      {},
      ADMIN_KEY,
    );
    assert.equal(byOperator.status, 202, JSON.stringify(byOperator.body));
    const verifyMails = () =>
      server.mails.filter((m) => m.to === email && /verify-email\?token=/.test(m.text));
    await until(() => verifyMails().length >= 2, "the operator's verification mail");
    const queued = verifyMails().at(-1)!;
    assert.doesNotMatch(queued.text, /evil\.example/);
    assert.ok(queued.text.includes(`${server.url}/verify-email?token=`), queued.text);
  });
});

describe('X-Content-Type-Options: nosniff on every answer', () => {
  let opened: OpenedBackend;
  let server: TestServer;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    server = await startTestServer({ backend: opened });
  });
  after(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  it('API answers, /v1 answers (whole, streamed, refused) and errors all carry it', async () => {
    const { key } = await server.register();
    const chat = { model: 'model-b', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] };
    const answers = [
      await server.call('GET', '/api/account', { key }),
      await server.call('GET', '/api/keys', { key }),
      await server.call('GET', '/api/account'),
      await server.call('GET', '/no/such/route'),
      await server.call('POST', '/api/auth/login', { body: { email: 'x@example.com' } }),
      await server.call('GET', '/v1/models'),
      await server.call('GET', '/health'),
      await server.call('POST', '/v1/chat/completions', { key, body: chat }),
      await server.call('POST', '/v1/chat/completions', { key, body: { ...chat, stream: true } }),
      await server.call('POST', '/v1/chat/completions', { body: chat }),
      await server.call('POST', '/v1/chat/completions', { key, body: '{not json' }),
      await server.call('POST', '/v1/messages/count_tokens', { key, body: chat }),
      await server.call('GET', '/v1/responses/resp_x', { key }),
    ];
    for (const [index, answer] of answers.entries())
      assert.equal(
        answer.headers.get('x-content-type-options'),
        'nosniff',
        `answer ${index} (${answer.status})`,
      );
  });
});
