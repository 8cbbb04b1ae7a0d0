import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  assertMidStreamError,
  assertNextSucceeds,
  assertNoHold,
  assertProviderError,
  type Catalog,
  chat,
  recordOf,
  startCatalog,
  streamedText,
} from './helpers/catalog.ts';
import { anthropicEvent, anthropicStart, anthropicText } from '../src/providers/anthropic/fake-anthropic.ts';
import type { Behaviour, RawStep } from '../src/providers/fake-upstream.ts';

const BLOCK_START = anthropicEvent('content_block_start', {
  index: 0,
  content_block: { type: 'text', text: '' },
});
const BLOCK_STOP = anthropicEvent('content_block_stop', { index: 0 });
const DELTA = anthropicEvent('message_delta', {
  delta: { stop_reason: 'end_turn', stop_sequence: null },
  usage: { output_tokens: 4 },
});
const STOP = anthropicEvent('message_stop');
const PING = anthropicEvent('ping');
const error = (type: string, message: string): string =>
  anthropicEvent('error', { error: { type, message } });
const raw = (...steps: RawStep[]): Behaviour => ({ kind: 'raw', steps });

/** The Anthropic half of the fault catalog: the Messages API's own stream events and errors. */
describe('fault catalog: Anthropic upstream', () => {
  let c: Catalog;
  before(async () => {
    c = await startCatalog();
  });
  after(() => c?.close());

  it('an error event as the first event: retried, then 502, nothing billed', async () => {
    const before = c.anthropic.received.length;
    const failing = raw(error('api_error', 'Internal server error'));
    c.anthropic.script(failing, failing);
    const answer = await chat(c, { model: 'model-a', stream: true });
    assertProviderError(answer);
    assert.equal(c.anthropic.received.length - before, 2);
    assert.equal((await recordOf(c, answer.requestId)).cost_micros, 0);
    await assertNoHold(c);
    await assertNextSucceeds(c, 'model-a');
  });

  for (const [kind, message] of [
    ['api_error', 'Internal server error'],
    ['overloaded_error', 'Overloaded'],
  ] as const) {
    it(`an ${kind} event mid-stream: one error event, the produced tokens billed`, async () => {
      c.anthropic.script(
        raw(
          anthropicStart(),
          BLOCK_START,
          anthropicText('Hello'),
          anthropicText(' world'),
          error(kind, message),
        ),
      );
      const answer = await chat(c, { model: 'model-a', stream: true });
      assertMidStreamError(answer);
      assert.equal(streamedText(answer), 'Hello world');
      const record = await recordOf(c, answer.requestId);
      assert.equal(record.status, 'error');
      assert.ok(record.completion_tokens >= 2, `billed ${record.completion_tokens}`);
      assert.ok(record.cost_micros > 0);
      await assertNoHold(c);
      await assertNextSucceeds(c, 'model-a');
    });
  }

  it('HTTP 529 overloaded_error on every attempt: 502; once: retried and answered', async () => {
    const overloaded: Behaviour = { kind: 'status', status: 529, message: 'Overloaded' };
    c.anthropic.script(overloaded, overloaded);
    const answer = await chat(c, { model: 'model-a', stream: true });
    assertProviderError(answer);
    await assertNoHold(c);
    c.anthropic.script(overloaded);
    const retried = await chat(c, { model: 'model-a' });
    assert.equal(retried.status, 200);
    await assertNextSucceeds(c, 'model-a');
  });

  it('ping events anywhere are skipped', async () => {
    c.anthropic.script(
      raw(
        PING,
        anthropicStart(),
        PING,
        BLOCK_START,
        anthropicText('Hi'),
        PING,
        BLOCK_STOP,
        DELTA,
        PING,
        STOP,
      ),
    );
    const answer = await chat(c, { model: 'model-a', stream: true });
    assert.equal(answer.status, 200);
    assert.equal(streamedText(answer), 'Hi');
    assert.equal(answer.events.at(-1), 'data: [DONE]');
    assert.ok(!answer.text.includes('ping'));
  });

  it('message_stop without message_delta: the stream ends normally, with a finish reason and usage', async () => {
    c.anthropic.script(raw(anthropicStart(30), BLOCK_START, anthropicText('Hi'), BLOCK_STOP, STOP));
    const answer = await chat(c, {
      model: 'model-a',
      stream: true,
      stream_options: { include_usage: true },
    });
    assert.equal(answer.status, 200);
    assert.equal(answer.events.at(-1), 'data: [DONE]');
    const chunks = answer.events.slice(0, -1).map((e) => JSON.parse(e.slice(6)));
    assert.ok(chunks.some((chunk) => chunk.choices[0]?.finish_reason === 'stop'));
    assert.equal(chunks.filter((chunk) => chunk.usage).length, 1);
    const record = await recordOf(c, answer.requestId);
    assert.equal(record.status, 'ok');
    assert.equal(record.prompt_tokens, 30);
  });

  it('unknown event types are ignored', async () => {
    c.anthropic.script(
      raw(
        anthropicStart(),
        anthropicEvent('content_block_magic', { index: 0, sparkle: true }),
        BLOCK_START,
        anthropicText('Hi'),
        anthropicEvent('content_block_delta', { index: 0, delta: { type: 'citations_delta', citation: {} } }),
        BLOCK_STOP,
        DELTA,
        STOP,
      ),
    );
    const answer = await chat(c, { model: 'model-a', stream: true });
    assert.equal(answer.status, 200);
    assert.equal(streamedText(answer), 'Hi');
    assert.equal(answer.events.at(-1), 'data: [DONE]');
    await assertNextSucceeds(c, 'model-a');
  });

  it('a malformed event and a stream cut before message_stop: one error event each', async () => {
    c.anthropic.script(
      raw(anthropicStart(), BLOCK_START, anthropicText('Hi'), 'event: content_block_delta\ndata: {oops\n\n'),
    );
    assertMidStreamError(await chat(c, { model: 'model-a', stream: true }));
    c.anthropic.script(raw(anthropicStart(), BLOCK_START, anthropicText('Hi'), BLOCK_STOP));
    assertMidStreamError(await chat(c, { model: 'model-a', stream: true }));
    await assertNoHold(c);
    await assertNextSucceeds(c, 'model-a');
  });
});
