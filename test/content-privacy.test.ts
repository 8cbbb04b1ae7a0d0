// The spec: "Request content is not stored." Nor logged: a unique marker sent in messages (whole, streamed and
// refused requests) must appear in no table and no column of either engine, and in no log line at debug level.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

/** Every row of every table of the test's own database or schema, as text. */
async function dumpDatabase(
  opened: OpenedBackend,
  engine: 'sqlite' | 'postgres',
): Promise<Map<string, string>> {
  const tables =
    engine === 'sqlite'
      ? (await opened.db.all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")).map(
          (t) => t.name,
        )
      : (
          await opened.db.all<{ table_name: string }>(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'",
            [opened.schema ?? null],
          )
        ).map((t) => t.table_name);
  const dump = new Map<string, string>();
  for (const table of tables) {
    const rows = await opened.db.all<Record<string, unknown>>(`SELECT * FROM "${table}"`);
    dump.set(
      table,
      JSON.stringify(rows, (_key, value: unknown) =>
        typeof value === 'bigint'
          ? value.toString()
          : value instanceof Uint8Array
            ? Buffer.from(value).toString('latin1')
            : value,
      ),
    );
  }
  return dump;
}

for (const backend of BACKENDS) {
  const skip = await backend.unavailable();
  describe(`request content is never stored or logged (${backend.name})`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let server: TestServer;
    const lines: string[] = [];

    before(async () => {
      opened = await backend.open();
      const logger = pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) });
      server = await startTestServer({
        backend: opened,
        yaml: {
          simulator: { chunk_interval_ms: 0, first_token_ms: 0 },
          // model-f goes to an upstream that cannot be reached: the failure path logs.
          providers: [{ id: 'dead', type: 'openai', base_url: 'http://127.0.0.1:1' }],
          models: { 'model-f': { deployments: [{ provider: 'dead', model: 'up-f' }] } },
          routing: { max_attempts: 1, retry_base_ms: 1 },
        },
        extra: { logger },
      });
    });
    after(async () => {
      await server?.close();
      await opened?.cleanup();
    });

    it('a marker in the messages reaches no table, no column and no log line', async () => {
      const marker = `privmark${randomBytes(8).toString('hex')}`;
      const { key, accountId } = await server.register();
      const messages = [
        { role: 'system', content: `You are ${marker}.` },
        { role: 'user', content: `Repeat after me: ${marker} ${marker}` },
        { role: 'assistant', content: `${marker}` },
        { role: 'user', content: [{ type: 'text', text: `and once more ${marker}` }] },
      ];
      const whole = await server.call('POST', '/v1/chat/completions', {
        key,
        body: { model: 'model-b', messages },
      });
      assert.equal(whole.status, 200, JSON.stringify(whole.body));
      const streamed = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'model-c',
          messages,
          stream: true,
          stream_options: { include_usage: true },
        }),
      });
      assert.equal(streamed.status, 200);
      assert.ok((await streamed.text()).endsWith('data: [DONE]\n\n'));
      // Refused requests carry the marker too: their errors must not echo or log it.
      for (const body of [
        { model: 'model-b', messages, temperature: 5 },
        { model: 'model-b', messages: [...messages, { role: `role-${marker}`, content: 'x' }] },
        { model: `model-${marker}`, messages },
      ]) {
        const refused = await server.call('POST', '/v1/chat/completions', { key, body });
        assert.ok(refused.status === 400 || refused.status === 404, JSON.stringify(refused.body));
      }
      const failed = await server.call('POST', '/v1/chat/completions', {
        key,
        body: { model: 'model-f', messages },
      });
      assert.equal(failed.status, 502);
      const malformed = await server.call('POST', '/v1/chat/completions', {
        key,
        body: `{"model":"model-b","messages":[{"role":"user","content":"${marker}"}`,
      });
      assert.equal(malformed.status, 400);
      assert.doesNotMatch(JSON.stringify(malformed.body), new RegExp(marker));

      await server.services.settlements.flush();
      const records = await opened.db.get<{ n: number }>(
        'SELECT COUNT(*) AS n FROM usage_records WHERE account_id = $1',
        [accountId],
      );
      assert.equal(
        Number(records?.n),
        3,
        'the two answers and the upstream failure were metered (the search has rows to look at)',
      );

      const dump = await dumpDatabase(opened, backend.name);
      assert.ok(dump.has('usage_records') && dump.has('accounts'), `tables: ${[...dump.keys()].join(', ')}`);
      for (const [table, text] of dump)
        assert.equal(text.includes(marker), false, `the marker is stored in ${table}`);

      const log = lines.join('');
      assert.ok(log.includes('Server listening'), 'the logger is the server’s (the search is not vacuous)');
      assert.ok(
        lines.some((line) => (JSON.parse(line) as { level: number }).level >= 40),
        'the upstream failure was logged',
      );
      assert.equal(
        log.includes(marker),
        false,
        `the marker is logged: ${lines.find((l) => l.includes(marker))}`,
      );
    });

    it('the dashboard playground stores and logs none of it either', async () => {
      const marker = `playmark${randomBytes(8).toString('hex')}`;
      const email = `privacy-${randomBytes(4).toString('hex')}@example.com`;
      const { accountId } = await server.register(email);
      const login = await server.call('POST', '/api/auth/login', {
        body: { email, password: 'correct horse battery' },
      });
      const headers = {
        cookie: (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '',
        'x-csrf-token': String(login.body.csrf_token),
      };
      const messages = [
        { role: 'system', content: `You are ${marker}.` },
        { role: 'user', content: `Repeat after me: ${marker}` },
      ];
      const path = '/api/playground/chat/completions';
      const whole = await server.call('POST', path, { headers, body: { model: 'model-b', messages } });
      assert.equal(whole.status, 200, JSON.stringify(whole.body));
      const streamed = await fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'model-c', messages, stream: true }),
      });
      assert.equal(streamed.status, 200);
      assert.ok((await streamed.text()).endsWith('data: [DONE]\n\n'));
      const refused = await server.call('POST', path, {
        headers,
        body: { model: `model-${marker}`, messages },
      });
      assert.equal(refused.status, 404, JSON.stringify(refused.body));
      const failed = await server.call('POST', path, { headers, body: { model: 'model-f', messages } });
      assert.equal(failed.status, 502);

      await server.services.settlements.flush();
      const records = await opened.db.get<{ n: number }>(
        'SELECT COUNT(*) AS n FROM usage_records WHERE account_id = $1',
        [accountId],
      );
      assert.equal(Number(records?.n), 3, 'the playground requests were metered');
      for (const [table, text] of await dumpDatabase(opened, backend.name))
        assert.equal(text.includes(marker), false, `the marker is stored in ${table}`);
      const log = lines.join('');
      assert.equal(
        log.includes(marker),
        false,
        `the marker is logged: ${lines.find((l) => l.includes(marker))}`,
      );
    });
  });
}
