import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';
import { until } from './helpers/until.ts';

const PLAYGROUND = '/api/playground/chat/completions';
const CHAT = { model: 'model-a', messages: [{ role: 'user', content: 'say hello' }] };

for (const backend of BACKENDS.filter((b) => b.name === 'sqlite')) {
  describe(`the dashboard playground on ${backend.name}`, () => {
    let opened: OpenedBackend;
    let server: TestServer;
    before(async () => {
      opened = await backend.open();
      server = await startTestServer({ backend: opened });
    });
    after(async () => {
      await server?.close();
      await opened?.cleanup();
    });

    /** A trial account at its key cap (the registration key plus two), signed in. */
    async function fullAccount(): Promise<{ key: string; cookie: string; csrf: string }> {
      const email = `play-${Date.now()}-${Math.random()}@example.com`;
      const { key } = await server.register(email);
      for (const name of ['two', 'three'])
        assert.equal((await server.call('POST', '/api/keys', { key, body: { name } })).status, 201);
      const capped = await server.call('POST', '/api/keys', { key, body: { name: 'four' } });
      assert.notEqual(capped.status, 201, 'the trial allows three keys');
      const login = await server.call('POST', '/api/auth/login', {
        body: { email, password: 'correct horse battery' },
      });
      const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
      return { key, cookie, csrf: login.body.csrf_token };
    }

    it('a signed-in account at its key cap chats without a key, billed and listed as the playground', async () => {
      const user = await fullAccount();
      const answer = await server.call('POST', PLAYGROUND, {
        body: CHAT,
        headers: { cookie: user.cookie, 'x-csrf-token': user.csrf },
      });
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      assert.equal(answer.body.object, 'chat.completion');
      assert.ok(answer.body.usage.total_tokens > 0);
      const requestId = answer.headers.get('x-request-id');
      let recent: { key_id: string; cost_usd: number } | undefined;
      await until(async () => {
        const rows = await server.call('GET', '/api/usage/recent?limit=5', { key: user.key });
        recent = rows.body.data.find((row: { request_id: string }) => row.request_id === requestId);
        return recent !== undefined;
      }, 'the usage record');
      assert.ok(recent);
      assert.match(recent.key_id, /^playground_/);
      assert.ok(recent.cost_usd > 0, 'billed to the account');
      const keys = await server.call('GET', '/api/keys', { key: user.key });
      assert.equal(keys.body.data.length, 3, 'the playground is never listed as a key');
      assert.ok(keys.body.data.every((k: { id: string }) => !k.id.startsWith('playground_')));
    });

    it('streams as /v1/chat/completions does', async () => {
      const user = await fullAccount();
      const response = await fetch(server.url + PLAYGROUND, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie: user.cookie, 'x-csrf-token': user.csrf },
        body: JSON.stringify({ ...CHAT, stream: true, stream_options: { include_usage: true } }),
      });
      assert.equal(response.status, 200);
      const text = await response.text();
      assert.match(text, /"usage":\{/);
      assert.match(text, /data: \[DONE\]/);
    });

    it('needs the session cookie and its CSRF token; an API key is not enough', async () => {
      const user = await fullAccount();
      const noCsrf = await server.call('POST', PLAYGROUND, { body: CHAT, headers: { cookie: user.cookie } });
      assert.equal(noCsrf.status, 403);
      assert.equal(noCsrf.body.error.code, 'forbidden');
      const wrongCsrf = await server.call('POST', PLAYGROUND, {
        body: CHAT,
        headers: { cookie: user.cookie, 'x-csrf-token': 'x'.repeat(user.csrf.length) },
      });
      assert.equal(wrongCsrf.status, 403);
      const byKey = await server.call('POST', PLAYGROUND, { body: CHAT, key: user.key });
      assert.equal(byKey.status, 401);
      assert.equal(byKey.body.error.code, 'unauthorized');
      const ended = await server.call('POST', PLAYGROUND, {
        body: CHAT,
        headers: { cookie: 'tollgate_session=tgs-nonsense', 'x-csrf-token': user.csrf },
      });
      assert.equal(ended.status, 401);
    });
  });
}
