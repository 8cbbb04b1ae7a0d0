import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertNoHold, type Catalog, chat, recordOf, startCatalog } from './helpers/catalog.ts';
import type { Behaviour } from '../src/providers/fake-upstream.ts';

/** A whole answer with exactly this JSON text, as an OpenAI-compatible server sends it. */
const answer = (text: string): Behaviour => ({
  kind: 'raw',
  headers: { 'content-type': 'application/json' },
  steps: [text],
});

/**
 * Whole answers from an OpenAI-type upstream go back as its own JSON text with only the top-level model replaced
 * (docs/decisions.md): on real sockets, what the client reads and what is billed.
 */
describe('a whole answer in the upstream’s own words', () => {
  let c: Catalog;
  before(async () => {
    c = await startCatalog();
  });
  after(() => c?.close());

  it('is the upstream’s text, spacing and escapes kept, with the public model id; its usage is billed', async () => {
    // Pretty-printed (Python's json.dumps with indent), with raw UTF-8 and an escaped quote in the content.
    const text = [
      '{',
      '  "id": "chatcmpl-9",',
      '  "object": "chat.completion",',
      '  "created": 1700000000,',
      '  "model" : "secret-upstream-model",',
      '  "choices": [{"index": 0, "message": {"role": "assistant", "content": "Grüße, \\"model\\": x"},',
      '    "logprobs": null, "finish_reason": "stop"}],',
      '  "usage": {"prompt_tokens": 21, "completion_tokens": 4, "total_tokens": 25}',
      '}',
    ].join('\n');
    c.openai.script(answer(text));
    const got = await chat(c, { model: 'model-b' });
    assert.equal(got.status, 200);
    assert.equal(got.text, text.replace('"secret-upstream-model"', '"model-b"'));
    const record = await recordOf(c, got.requestId);
    assert.equal(record.prompt_tokens, 21);
    assert.equal(record.completion_tokens, 4);
    assert.equal(Boolean(record.estimated), false);
    await assertNoHold(c);
  });

  it('is the parse serialised when the upstream named a model twice, so its name never reaches the client', async () => {
    const text =
      '{"id":"chatcmpl-10","object":"chat.completion","created":1,"model":"secret-a",' +
      '"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],' +
      '"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6},"mod\\u0065l":"secret-b"}';
    c.openai.script(answer(text));
    const got = await chat(c, { model: 'model-b' });
    assert.equal(got.status, 200);
    assert.doesNotMatch(got.text, /secret/);
    assert.equal((got.body as { model: string }).model, 'model-b');
  });

  it('carries the usage the gateway filled in when the upstream sent none', async () => {
    const text =
      '{"id":"chatcmpl-11","object":"chat.completion","created":1,"model":"secret-c",' +
      '"choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}]}';
    c.openai.script(answer(text));
    const got = await chat(c, { model: 'model-b' });
    const body = got.body as { model: string; usage: { prompt_tokens: number; completion_tokens: number } };
    assert.equal(body.model, 'model-b');
    const record = await recordOf(c, got.requestId);
    assert.equal(Boolean(record.estimated), true);
    assert.equal(body.usage.prompt_tokens, record.prompt_tokens);
    assert.equal(body.usage.completion_tokens, record.completion_tokens);
    assert.doesNotMatch(got.text, /secret/);
  });
});
