import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  assertMidStreamError,
  assertNextSucceeds,
  assertNoHold,
  assertProviderError,
  type Catalog,
  chat,
  IDLE_MS,
  recordOf,
  startCatalog,
  streamedText,
} from './helpers/catalog.ts';
import { openaiChunk, openaiErrorEvent } from '../src/providers/openai/fake-openai.ts';
import { type Behaviour, HANG, type RawStep, RESET } from '../src/providers/fake-upstream.ts';

const ROLE = openaiChunk({ role: 'assistant', content: '', refusal: null }, { usage: null });
const text = (content: string): string => openaiChunk({ content }, { usage: null });
const STOP = openaiChunk({}, { finish: 'stop', usage: null });
const USAGE = openaiChunk(
  {},
  { choices: [], usage: { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 } },
);
const DONE = 'data: [DONE]\n\n';
const raw = (...steps: RawStep[]): Behaviour => ({ kind: 'raw', steps });

/**
 * The OpenAI-type half of the fault catalog: what an OpenAI-compatible upstream (OpenAI, Azure, vLLM …)
 * really sends when things go wrong, on real sockets. Each scenario asserts what the client gets, what is
 * billed, that no hold is left, and that the next request on the same gateway succeeds.
 */
describe('fault catalog: OpenAI-type upstream', () => {
  let c: Catalog;
  before(async () => {
    c = await startCatalog();
  });
  after(() => c?.close());

  /** Scripts `behaviour` for every attempt (both fail), streams, and asserts the 502 and that nothing is billed. */
  async function failsBeforeFirstByte(behaviour: Behaviour, stream = true): Promise<void> {
    const before = c.openai.received.length;
    c.openai.script(behaviour, behaviour);
    const answer = await chat(c, { model: 'model-b', stream });
    assertProviderError(answer);
    assert.equal(c.openai.received.length - before, 2, 'retried once, then gave up');
    const record = await recordOf(c, answer.requestId);
    assert.equal(record.status, 'error');
    assert.equal(record.cost_micros, 0, 'nothing was produced, nothing is billed');
    await assertNoHold(c);
    await assertNextSucceeds(c, 'model-b');
  }

  /** Scripts `behaviour` once, streams, and asserts the mid-stream error event and what is billed. */
  async function failsMidStream(behaviour: Behaviour, produced: string): Promise<void> {
    c.openai.script(behaviour);
    const answer = await chat(c, { model: 'model-b', stream: true });
    assertMidStreamError(answer);
    assert.equal(streamedText(answer), produced);
    const record = await recordOf(c, answer.requestId);
    assert.equal(record.status, 'error');
    assert.equal(record.estimated, 1, 'no usage arrived: the produced text is counted');
    assert.ok(record.completion_tokens >= 1, `billed ${record.completion_tokens} completion tokens`);
    assert.ok(record.cost_micros > 0, 'the tokens already produced are billed');
    await assertNoHold(c);
    await assertNextSucceeds(c, 'model-b');
  }

  it('an in-band error event as the first event: retried, then 502', () =>
    failsBeforeFirstByte(raw(openaiErrorEvent('The server had an error while processing your request.'))));

  it('an in-band error event mid-stream: one error event, the produced tokens billed', () =>
    failsMidStream(
      raw(ROLE, text('Hello'), text(' world'), openaiErrorEvent('The server had an error.')),
      'Hello world',
    ));

  it('a malformed JSON event first: retried, then 502', () =>
    failsBeforeFirstByte(raw('data: {not json\n\n')));

  it('a malformed JSON event mid-stream: one error event', () =>
    failsMidStream(raw(ROLE, text('Hello'), 'data: {not json\n\n'), 'Hello'));

  it('a well-formed event that is not a chunk, first and mid-stream', async () => {
    await failsBeforeFirstByte(raw('data: {"object":"something.else"}\n\n'));
    await failsMidStream(raw(ROLE, text('Hi'), 'data: [1,2,3]\n\n'), 'Hi');
  });

  it('a stream that ends without [DONE]: one error event', () =>
    failsMidStream(raw(ROLE, text('Hello'), STOP), 'Hello'));

  it('a connection reset mid-stream: one error event', () =>
    failsMidStream(raw(ROLE, text('Hello'), text(' there'), RESET), 'Hello there'));

  it('a hang after the headers (no first event in time): retried, then 502', async () => {
    const started = Date.now();
    await failsBeforeFirstByte(raw(HANG));
    assert.ok(Date.now() - started < 2 * IDLE_MS + 2500, `took ${Date.now() - started} ms`);
  });

  it('a hang before the headers, streamed and not: the retry answers', async () => {
    // Both requests hang on their first attempt at once (undici's timers tick every half second or so).
    const before = c.openai.received.length;
    c.openai.script({ kind: 'hang' }, { kind: 'hang' });
    const [streamed, whole] = await Promise.all([
      chat(c, { model: 'model-b', stream: true }),
      chat(c, { model: 'model-b' }),
    ]);
    assert.equal(streamed.status, 200);
    assert.equal(streamedText(streamed), 'Hello from the fake upstream.');
    assert.equal(whole.status, 200);
    assert.equal(c.openai.received.length - before, 4);
    await assertNoHold(c);
  });

  it('a hang mid-stream (idle timeout): one error event', async () => {
    const started = Date.now();
    await failsMidStream(raw(ROLE, text('Hello'), HANG), 'Hello');
    assert.ok(Date.now() - started < IDLE_MS + 1500, `took ${Date.now() - started} ms`);
  });

  it('an HTML 500 page: retried, then 502 without the page in the message', async () => {
    const page: Behaviour = {
      kind: 'raw',
      status: 500,
      headers: { 'content-type': 'text/html' },
      steps: ['<html><body><h1>500 Internal Server Error</h1></body></html>'],
    };
    c.openai.script(page, page);
    const answer = await chat(c, { model: 'model-b', stream: true });
    assertProviderError(answer);
    assert.doesNotMatch(answer.body.error.message, /<html>/);
    await assertNextSucceeds(c, 'model-b');
  });

  it('an endless error page is read no further than its start: 502 at once', async () => {
    const endless: Behaviour = {
      kind: 'raw',
      status: 503,
      headers: { 'content-type': 'text/html' },
      steps: ['<html>' + 'x'.repeat(64 * 1024), '<p>still going</p>', HANG],
    };
    c.openai.script(endless, endless);
    const started = Date.now();
    const answer = await chat(c, { model: 'model-b', stream: true });
    assertProviderError(answer);
    assert.ok(Date.now() - started < IDLE_MS, `took ${Date.now() - started} ms`);
    await assertNextSucceeds(c, 'model-b');
  });

  it('a JSON answer to a stream request: retried, then 502', () =>
    failsBeforeFirstByte({
      kind: 'raw',
      headers: { 'content-type': 'application/json' },
      steps: [
        JSON.stringify({
          id: 'chatcmpl-x',
          object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
        }),
      ],
    }));

  it('CRLF line endings, split between reads, are read as LF', async () => {
    const crlf = (event: string): string => event.replace(/\n/g, '\r\n');
    const usage = crlf(USAGE);
    c.openai.script(
      raw(
        crlf(ROLE),
        crlf(text('Hello')).slice(0, -3),
        crlf(text('Hello')).slice(-3),
        usage,
        crlf(STOP),
        crlf(DONE),
      ),
    );
    const answer = await chat(c, { model: 'model-b', stream: true });
    assert.equal(answer.status, 200);
    assert.equal(streamedText(answer), 'Hello');
    assert.equal(answer.events.at(-1), 'data: [DONE]');
    assert.equal(answer.events.filter((e) => e.includes('"content":"Hello"')).length, 1);
    await assertNextSucceeds(c, 'model-b');
  });

  it('comment, event:, id: and retry: lines are ignored', async () => {
    c.openai.script(
      raw(
        ': keep-alive\n\n',
        'retry: 3000\n\n',
        `id: 1\nevent: message\n${ROLE}`,
        ': ping\n\n',
        `id: 2\n${text('Hello')}`,
        USAGE,
        STOP,
        DONE,
      ),
    );
    const answer = await chat(c, { model: 'model-b', stream: true });
    assert.equal(answer.status, 200);
    assert.equal(streamedText(answer), 'Hello');
    assert.equal(answer.events.at(-1), 'data: [DONE]');
    assert.ok(!answer.text.includes('keep-alive') && !answer.text.includes('retry'));
  });

  it('a multi-byte UTF-8 character split across reads arrives whole', async () => {
    const event = Buffer.from(text('naïve 日本 🙂'));
    const cut = event.indexOf(Buffer.from('🙂')) + 2; // inside the 4-byte emoji
    c.openai.script(raw(ROLE, event.subarray(0, cut), event.subarray(cut), USAGE, STOP, DONE));
    const answer = await chat(c, { model: 'model-b', stream: true });
    assert.equal(streamedText(answer), 'naïve 日本 🙂');
    assert.ok(!answer.text.includes('\uFFFD'), 'no replacement character');
  });

  it('one 1 MiB event is relayed whole', async () => {
    const big = 'x'.repeat(1024 * 1024);
    c.openai.script(raw(ROLE, text(big), USAGE, STOP, DONE));
    const answer = await chat(c, { model: 'model-b', stream: true });
    assert.equal(answer.status, 200);
    assert.equal(streamedText(answer).length, big.length);
    assert.equal(answer.events.at(-1), 'data: [DONE]');
  });

  it('usage on the last content chunk: the client gets usage once, details unchanged', async () => {
    const usage = {
      prompt_tokens: 9,
      completion_tokens: 2,
      total_tokens: 11,
      prompt_tokens_details: { cached_tokens: 4, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 1, audio_tokens: 0 },
    };
    c.openai.script(raw(ROLE, text('Hi'), openaiChunk({}, { finish: 'stop', usage }), DONE));
    const answer = await chat(c, {
      model: 'model-b',
      stream: true,
      stream_options: { include_usage: true },
    });
    const withUsage = answer.events.filter((e) => e.includes('"usage":{'));
    assert.equal(withUsage.length, 1, `usage once in ${JSON.stringify(answer.events)}`);
    assert.deepEqual(JSON.parse(withUsage[0]!.slice(6)).usage, usage);
    const record = await recordOf(c, answer.requestId);
    assert.equal(record.completion_tokens, 2);
    assert.equal(record.estimated, 0);

    // Without include_usage the client gets none, and the upstream's is still billed.
    c.openai.script(raw(ROLE, text('Hi'), openaiChunk({}, { finish: 'stop', usage }), DONE));
    const quiet = await chat(c, { model: 'model-b', stream: true });
    assert.ok(!quiet.text.includes('"usage":{'));
    assert.equal((await recordOf(c, quiet.requestId)).prompt_tokens, 9);
  });

  it('a stream with no usage at all: estimated, and the client that asked gets one usage chunk', async () => {
    c.openai.script(raw(ROLE, text('Hello there'), STOP, DONE));
    const answer = await chat(c, {
      model: 'model-b',
      stream: true,
      stream_options: { include_usage: true },
    });
    assert.equal(answer.status, 200);
    assert.equal(answer.events.filter((e) => e.includes('"usage":{')).length, 1);
    const record = await recordOf(c, answer.requestId);
    assert.equal(record.estimated, 1);
    assert.ok(record.completion_tokens >= 2);
  });

  for (const status of [429, 503]) {
    it(`a ${status} with Retry-After: waited out and retried; twice, 502`, async () => {
      const busy: Behaviour = {
        kind: 'status',
        status,
        message: 'Rate limit reached',
        headers: { 'retry-after': '0' },
      };
      c.openai.script(busy);
      const retried = await chat(c, { model: 'model-b', stream: true });
      assert.equal(retried.status, 200);
      await failsBeforeFirstByte(busy);
    });
  }

  describe('whole (non-streamed) answers', () => {
    it('a malformed body: retried, then 502', () => failsBeforeFirstByte({ kind: 'malformed' }, false));

    it('a 200 whose body is an error object: retried, then 502', () =>
      failsBeforeFirstByte(
        {
          kind: 'raw',
          headers: { 'content-type': 'application/json' },
          steps: [JSON.stringify({ error: { message: 'overloaded', type: 'server_error' } })],
        },
        false,
      ));

    it('a 400: passed on as 400 with the upstream message, not retried', async () => {
      const before = c.openai.received.length;
      c.openai.script({ kind: 'status', status: 400, message: "Unsupported parameter: 'temperature'" });
      const answer = await chat(c, { model: 'model-b' });
      assert.equal(answer.status, 400);
      assert.equal(answer.body.error.code, 'invalid_request');
      assert.match(answer.body.error.message, /Unsupported parameter: 'temperature'/);
      assert.equal(c.openai.received.length - before, 1);
      assert.equal((await recordOf(c, answer.requestId)).cost_micros, 0);
      await assertNoHold(c);
      await assertNextSucceeds(c, 'model-b');
    });

    it('a hang (the first-byte timeout, above) and a reset: retried, then 502', () =>
      failsBeforeFirstByte({ kind: 'reset' }, false));
  });
});
