import assert from 'node:assert/strict';
import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import OpenAI, { APIError } from 'openai';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';

const backend = BACKENDS[0]!;

describe('the openai SDK against Tollgate (simulator models)', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let client: OpenAI;
  let key: string;

  before(async () => {
    opened = await backend.open();
    server = await startTestServer({ backend: opened, yaml: { simulator: { chunk_interval_ms: 2 } } });
    ({ key } = await server.registerOn('pro'));
    client = new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 });
  });
  after(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  it('a non-streamed completion has the spec shape, the public model id and a request id', async () => {
    const completion = await client.chat.completions.create({
      model: 'model-b',
      messages: [{ role: 'user', content: 'Say hello' }],
    });
    assert.equal(completion.object, 'chat.completion');
    assert.equal(completion.model, 'model-b');
    assert.match(completion.id, /^chatcmpl-/);
    assert.equal(typeof completion.created, 'number');
    assert.equal(completion.choices[0]?.message.role, 'assistant');
    assert.ok((completion.choices[0]?.message.content ?? '').length > 0);
    assert.equal(completion.choices[0]?.finish_reason, 'stop');
    const usage = completion.usage!;
    assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
    assert.match(completion._request_id ?? '', /^req_/);
  });

  it('the simulator is deterministic: the same request gets the same answer', async () => {
    const request = { model: 'model-c', messages: [{ role: 'user' as const, content: 'Same question' }] };
    const first = await client.chat.completions.create(request);
    const second = await client.chat.completions.create(request);
    assert.equal(first.choices[0]?.message.content, second.choices[0]?.message.content);
    assert.deepEqual(first.usage, second.usage);
  });

  it('a streamed completion arrives chunk by chunk, then usage when asked, then [DONE]', async () => {
    const stream = await client.chat.completions.create({
      model: 'model-b',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Stream please' }],
    });
    let text = '';
    let chunks = 0;
    let usage: OpenAI.CompletionUsage | undefined | null;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      assert.equal(chunk.object, 'chat.completion.chunk');
      assert.equal(chunk.model, 'model-b');
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices[0];
      if (choice?.delta.content) text += choice.delta.content;
      if (choice?.finish_reason) finish = choice.finish_reason;
      chunks += 1;
    }
    assert.ok(chunks > 5, `got ${chunks} chunks`);
    assert.equal(finish, 'stop');
    assert.ok(usage && usage.completion_tokens > 0);
    const whole = await client.chat.completions.create({
      model: 'model-b',
      messages: [{ role: 'user', content: 'Stream please' }],
    });
    assert.equal(
      text,
      whole.choices[0]?.message.content,
      'the stream carries the same text as the whole answer',
    );
    assert.deepEqual(usage, whole.usage);
  });

  it('without include_usage no usage chunk is sent', async () => {
    const stream = await client.chat.completions.create({
      model: 'model-e',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    let chunks = 0;
    for await (const chunk of stream) {
      assert.ok(chunk.choices.length > 0);
      assert.equal(chunk.usage, undefined);
      chunks += 1;
    }
    assert.ok(chunks > 0, 'a stream of zero chunks must not pass');
  });

  it('a multi-turn history is accepted and answered', async () => {
    const completion = await client.chat.completions.create({
      model: 'model-d',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'What is 2+2?' },
        { role: 'assistant', content: '4' },
        { role: 'user', content: [{ type: 'text', text: 'And 3+3?' }] },
      ],
    });
    assert.ok(completion.choices[0]?.message.content);
    assert.ok((completion.usage?.prompt_tokens ?? 0) > 20);
  });

  it('a tools round trip: tool call, a tool message, then the answer', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Weather for a city',
          parameters: {
            type: 'object',
            properties: { city: { type: 'string' }, days: { type: 'integer' } },
            required: ['city', 'days'],
          },
        },
      },
    ];
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const first = await client.chat.completions.create({ model: 'model-a', messages, tools });
    const call = first.choices[0]?.message.tool_calls?.[0];
    assert.equal(first.choices[0]?.finish_reason, 'tool_calls');
    assert.ok(call && call.type === 'function');
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'example', days: 1 });
    messages.push(first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: '{"temp": 21}' });
    const second = await client.chat.completions.create({ model: 'model-a', messages, tools });
    assert.equal(second.choices[0]?.finish_reason, 'stop');
    assert.match(second.choices[0]?.message.content ?? '', /^From the tool result/);

    const streamed = await client.chat.completions.create({
      model: 'model-a',
      messages: [messages[0]!],
      tools,
      stream: true,
    });
    let args = '';
    let name = '';
    for await (const chunk of streamed) {
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
        name += delta.function?.name ?? '';
        args += delta.function?.arguments ?? '';
      }
    }
    assert.equal(name, 'get_weather');
    assert.deepEqual(JSON.parse(args), { city: 'example', days: 1 });
  });

  it('max_tokens cuts the answer with finish_reason length', async () => {
    const completion = await client.chat.completions.create({
      model: 'model-b',
      max_tokens: 3,
      messages: [{ role: 'user', content: 'Long answer please' }],
    });
    assert.equal(completion.choices[0]?.finish_reason, 'length');
    assert.equal(completion.usage?.completion_tokens, 3);
  });

  it('aborting a stream mid-way stops it and bills only what was generated', async () => {
    const slow = await startTestServer({ backend: opened, yaml: { simulator: { chunk_interval_ms: 50 } } });
    try {
      const slowClient = new OpenAI({ apiKey: key, baseURL: `${slow.url}/v1`, maxRetries: 0 });
      const { data: stream, response } = await slowClient.chat.completions
        .create({ model: 'model-b', stream: true, messages: [{ role: 'user', content: 'abort me' }] })
        .withResponse();
      const requestId = response.headers.get('x-request-id')!;
      let received = 0;
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta.content) received += 1;
        if (received === 3) break;
      }
      await slow.services.settlements.flush();
      let record: any;
      for (let i = 0; i < 50 && !record; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        await slow.services.settlements.flush();
        record = await opened.db.get('SELECT * FROM usage_records WHERE request_id = $1', [requestId]);
      }
      assert.ok(record, 'the cancelled stream has a usage record');
      assert.equal(record.status, 'cancelled');
      assert.ok(
        record.completion_tokens >= 3 && record.completion_tokens < 30,
        `billed ${record.completion_tokens} completion tokens`,
      );
      assert.ok(record.cost_micros > 0);
    } finally {
      await slow.close();
    }
  });

  it('each error status raises the SDK error class of that status, with requestID set', async () => {
    const cases: [() => Promise<unknown>, new (...args: never[]) => APIError, number][] = [
      [
        () => client.chat.completions.create({ model: 'model-b', messages: [], temperature: 3 }),
        OpenAI.BadRequestError,
        400,
      ],
      [
        () =>
          client.chat.completions.create({
            model: 'model-b',
            messages: [{ role: 'user', content: 'x' }],
            temperature: 2.5,
          }),
        OpenAI.BadRequestError,
        400,
      ],
      [
        () =>
          new OpenAI({
            apiKey: 'tg-wrong-key-000000000000000000',
            baseURL: `${server.url}/v1`,
            maxRetries: 0,
          }).chat.completions.create({ model: 'model-b', messages: [{ role: 'user', content: 'x' }] }),
        OpenAI.AuthenticationError,
        401,
      ],
      [
        () =>
          client.chat.completions.create({ model: 'model-x', messages: [{ role: 'user', content: 'x' }] }),
        OpenAI.NotFoundError,
        404,
      ],
    ];
    for (const [run, errorClass, status] of cases) {
      await assert.rejects(run(), (error: unknown) => {
        assert.ok(
          error instanceof errorClass,
          `expected ${errorClass.name} for ${status}, got ${String(error)}`,
        );
        assert.equal(error.status, status);
        assert.match(error.requestID ?? '', /^req_/);
        return true;
      });
    }
  });

  it('field rules: every out-of-range or mistyped field is a 400 naming the field', async () => {
    const base = { model: 'model-b', messages: [{ role: 'user', content: 'x' }] };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ temperature: -0.1 }, /temperature/],
      [{ top_p: 1.5 }, /top_p/],
      [{ presence_penalty: 2.5 }, /presence_penalty/],
      [{ frequency_penalty: -3 }, /frequency_penalty/],
      [{ max_tokens: 0 }, /max_tokens/],
      [{ max_tokens: 1.5 }, /max_tokens/],
      [{ max_tokens: 100_000 }, /max_tokens/],
      [{ stream: 'yes' }, /stream/],
      [{ messages: [{ role: 'robot', content: 'x' }] }, /role/],
      [{ messages: [{ role: 'user' }] }, /content/],
      [{ messages: 'hello' }, /messages/],
      [{ model: 7 }, /model/],
      [{ tools: [{ type: 'function', function: { name: 'bad name!' } }] }, /tools\[0\]\.function\.name/],
      [
        { tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'string' } } }] },
        /parameters/,
      ],
      [{ tool_choice: { type: 'function', function: { name: 'missing' } } }, /tool_choice/],
      [{ messages: [{ role: 'user', content: 'x '.repeat(70_000) }] }, /context window/],
    ];
    for (const [override, pattern] of cases) {
      const response = await server.call('POST', '/v1/chat/completions', {
        key,
        body: { ...base, ...override },
      });
      assert.equal(response.status, 400, JSON.stringify(override).slice(0, 100));
      assert.equal(response.body.error.code, 'invalid_request');
      assert.match(response.body.error.message, pattern);
    }
    const malformed = await server.call('POST', '/v1/chat/completions', {
      key,
      body: '{"model": "model-b", "messages": [',
    });
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.error.code, 'invalid_request');
  });

  it('the chat endpoint answers bad HTTP with the error object: 405, 403, 415, 400, 413, and keeps the connection', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const { port } = new URL(server.url);
    const send = (
      method: string,
      path: string,
      headers: Record<string, string>,
      chunks: string[],
    ): Promise<{ status: number; body: any; headers: Record<string, unknown>; localPort: number }> =>
      new Promise((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (piece: string) => (text += piece));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              body: JSON.parse(text),
              headers: res.headers,
              localPort: req.socket?.localPort ?? 0,
            }),
          );
        });
        req.on('error', reject);
        for (const chunk of chunks) req.write(chunk);
        req.end();
      });
    const json = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const valid = JSON.stringify({ model: 'model-b', messages: [{ role: 'user', content: 'x' }] });
    const expectError = (
      response: { status: number; body: any; headers: Record<string, unknown> },
      status: number,
      code: string,
    ): void => {
      assert.equal(response.status, status, JSON.stringify(response.body));
      assert.equal(response.body.error.code, code);
      assert.equal(typeof response.body.error.message, 'string');
      assert.match(String(response.headers['x-request-id']), /^req_/);
    };
    try {
      const wrongMethod = await send(
        'GET',
        '/v1/chat/completions',
        { authorization: json.authorization },
        [],
      );
      expectError(wrongMethod, 405, 'method_not_allowed');
      assert.equal(wrongMethod.headers['allow'], 'POST');
      expectError(
        await send('POST', '/v1/chat/completions', { ...json, authorization: `Bearer ${ADMIN_KEY}` }, [
          valid,
        ]),
        403,
        'forbidden',
      );
      expectError(
        await send('POST', '/v1/chat/completions', { ...json, 'content-type': 'text/plain' }, [valid]),
        415,
        'invalid_request',
      );
      expectError(
        await send('POST', '/v1/chat/completions', { ...json, 'content-length': '0' }, []),
        400,
        'invalid_request',
      );
      const first = await send('POST', '/v1/chat/completions', json, [valid]);
      assert.equal(first.status, 200);
      // Over the 4 MiB limit, declared up front and sent chunked: 413 both ways, on the same connection.
      const big = 'x'.repeat(1024 * 1024);
      const declared = await send(
        'POST',
        '/v1/chat/completions',
        { ...json, 'content-length': String(5 * big.length) },
        [big, big, big, big, big],
      );
      expectError(declared, 413, 'invalid_request');
      const chunked = await send('POST', '/v1/chat/completions', json, [big, big, big, big, big]);
      expectError(chunked, 413, 'invalid_request');
      const after413 = await send('POST', '/v1/chat/completions?trace=1', json, [valid]);
      assert.equal(after413.status, 200, 'a query string is the same route');
      assert.equal(after413.localPort, first.localPort, 'the connection survived the 413s');
      assert.equal(chunked.localPort, first.localPort);
    } finally {
      agent.destroy();
    }
  });

  it('a connection that never sends a request does not hold up a shutdown', async () => {
    const own = await startTestServer({ backend: opened });
    const socket = connect(Number(new URL(own.url).port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const closed = new Promise((resolve) => socket.once('close', () => resolve('closed')));
    const within = (ms: number) =>
      new Promise((resolve) => setTimeout(resolve, ms, `still open after ${ms} ms`));
    try {
      // Node's own timeouts would close it only after a minute or more.
      assert.equal(await Promise.race([own.close().then(() => 'closed'), within(5_000)]), 'closed');
      assert.equal(await Promise.race([closed, within(1_000)]), 'closed', 'the silent connection');
    } finally {
      socket.destroy();
    }
  });

  it('a keep-alive connection whose stream ends during a shutdown is closed then, not when the client hangs up', async () => {
    const own = await startTestServer({ backend: opened, yaml: { simulator: { chunk_interval_ms: 20 } } });
    const registered = await own.register();
    // Node's agent keeps an idle socket open for as long as the server does (72 s).
    const agent = new Agent({ keepAlive: true });
    const within = (ms: number) =>
      new Promise((resolve) => setTimeout(resolve, ms, `still open after ${ms} ms`));
    try {
      const { port } = new URL(own.url);
      const ended = new Promise<string>((resolve, reject) => {
        const req = httpRequest(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/v1/chat/completions',
            headers: { authorization: `Bearer ${registered.key}`, 'content-type': 'application/json' },
            agent,
          },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (piece: string) => {
              text += piece;
              if (!closing) closing = own.close().then(() => 'closed'); // the first chunk is out: shut down
            });
            res.on('end', () => resolve(text));
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(
          JSON.stringify({ model: 'model-b', stream: true, messages: [{ role: 'user', content: 'x' }] }),
        );
      });
      let closing: Promise<string> | undefined;
      assert.match(await ended, /data: \[DONE\]\n\n$/, 'the stream in flight finished');
      assert.equal(await Promise.race([closing!, within(5_000)]), 'closed', 'the shutdown ended with it');
    } finally {
      agent.destroy();
    }
  });

  it('answers carry x-request-id, the overhead and cost headers, and /metrics counts the requests', async () => {
    const response = await server.call('POST', '/v1/chat/completions', {
      key,
      body: { model: 'model-f', messages: [{ role: 'user', content: 'x' }] },
    });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('x-request-id') ?? '', /^req_/);
    assert.ok(Number(response.headers.get('x-tollgate-overhead-ms')) >= 0);
    assert.match(response.headers.get('x-tollgate-cost-usd') ?? '', /^0\.\d{6}$/);
    const metrics = await fetch(`${server.url}/metrics`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    }).then((r) => r.text());
    assert.match(
      metrics,
      /tollgate_chat_requests_total\{model="model-f",provider="simulator",status="ok"\} 1/,
    );
    assert.match(metrics, /tollgate_chat_time_to_first_token_seconds_bucket/);
  });
});
