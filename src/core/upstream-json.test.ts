import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChatCompletion } from './chat-types.ts';
import { completionJson, keepUpstreamJson, topLevelModel, withoutUpstreamJson } from './upstream-json.ts';

// An OpenAI chat completion as the API documents it (https://platform.openai.com/docs/api-reference/chat/object).
const ANSWER =
  '{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini-2024-07-18",' +
  '"choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"logprobs":null,"finish_reason":"stop"}],' +
  '"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}';

/** The upstream's text parsed and kept as the provider keeps it, the model set to the public id. */
function answered(text: string): ChatCompletion {
  const completion = JSON.parse(text) as ChatCompletion;
  keepUpstreamJson(completion, text);
  completion.model = 'public-model';
  return completion;
}

describe('completionJson', () => {
  it('is the upstream’s own text with only the model value replaced', () => {
    const json = completionJson(answered(ANSWER));
    assert.equal(json, ANSWER.replace('"gpt-4o-mini-2024-07-18"', '"public-model"'));
  });

  it('keeps the upstream’s spacing, and the same JSON as the parse serialised', () => {
    const spaced = `{\n  "id": "x",\n  "model" :\t"up\\"stream",\n  "choices": [],\n  "usage": null\n}\n`;
    const completion = answered(spaced);
    const json = completionJson(completion);
    assert.ok(json.includes('"model" :\t"public-model"'));
    assert.deepEqual(JSON.parse(json), JSON.parse(JSON.stringify(completion)));
  });

  it('serialises the parse when the upstream’s text was dropped (the parse changed in more than its model)', () => {
    const completion = answered(ANSWER);
    withoutUpstreamJson(completion);
    completion.usage = { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 };
    assert.equal(completionJson(completion), JSON.stringify(completion));
  });

  it('serialises the parse for anything but a plain top-level model, so the client reads the public id', () => {
    const cases = [
      // A nested model and the top-level one.
      '{"model":"up","choices":[{"message":{"model":"up"}}]}',
      // A repeated key: JSON reads the last.
      '{"model":"up","choices":[],"model":"up2"}',
      // A key spelt with an escape is the same key.
      '{"model":"up","choices":[],"mod\\u0065l":"up2"}',
      // Not a string.
      '{"model":7,"choices":[]}',
      // Only a nested one.
      '{"choices":[{"model":"up"}]}',
      // The key text inside another key.
      '{"x\\"model":"y","choices":[]}',
    ];
    for (const text of cases) {
      const completion = answered(text);
      assert.equal(completionJson(completion), JSON.stringify(completion), text);
      assert.equal((JSON.parse(completionJson(completion)) as ChatCompletion).model, 'public-model', text);
    }
  });
});

describe('topLevelModel', () => {
  it('finds the value with its quotes, escapes included', () => {
    const text = '{"id":"a\\"b","model":"m\\"x","choices":[]}';
    const span = topLevelModel(text);
    assert.ok(span);
    assert.equal(text.slice(...span), '"m\\"x"');
  });

  it('finds nothing in a text without a model', () => {
    assert.equal(topLevelModel('{"choices":[]}'), undefined);
  });
});
