import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ParamPolicy } from '../core/config.ts';
import { DEFAULT_PARAM_POLICY } from '../config/defaults.ts';
import type { ChatRequest } from '../gateway/chat-types.ts';
import { GatewayError } from '../core/gateway-error.ts';
import { applyParamPolicy } from './param-policy.ts';

const requestWith = (fields: Record<string, unknown>): ChatRequest => {
  const body = { model: 'model-b', messages: [{ role: 'user', content: 'hi' }], ...fields };
  return {
    model: 'model-b',
    messages: [{ role: 'user', content: 'hi' }],
    stream: false,
    includeUsage: false,
    maxTokens: typeof fields['max_tokens'] === 'number' ? fields['max_tokens'] : undefined,
    temperature: typeof fields['temperature'] === 'number' ? fields['temperature'] : 0.7,
    topP: undefined,
    stop: undefined,
    tools: undefined,
    toolChoice: undefined,
    body,
  };
};

/** The body as the upstream receives it: JSON, where a field set to undefined is left out. */
const wire = (request: ChatRequest): Record<string, unknown> =>
  JSON.parse(JSON.stringify(request.body)) as Record<string, unknown>;

const policy = (overrides: Partial<ParamPolicy>): ParamPolicy => ({ ...DEFAULT_PARAM_POLICY, ...overrides });

const shape = (fields: Record<string, unknown>, rules: ParamPolicy = DEFAULT_PARAM_POLICY): ChatRequest => {
  const shaped = applyParamPolicy(requestWith(fields), rules);
  assert.ok(!(shaped instanceof GatewayError), `refused: ${(shaped as GatewayError).message}`);
  return shaped;
};

const refusal = (
  fields: Record<string, unknown>,
  rules: ParamPolicy = DEFAULT_PARAM_POLICY,
): GatewayError => {
  const shaped = applyParamPolicy(requestWith(fields), rules);
  assert.ok(shaped instanceof GatewayError, 'expected a refusal');
  return shaped;
};

describe('the parameter policy', () => {
  it('by default, sends the spec’s temperature when the request has none, and passes unknown fields', () => {
    const shaped = shape({ seed: 7, logit_bias: { '50256': -100 }, metadata: { a: 'b' } });
    assert.equal(shaped.body['temperature'], 0.7);
    assert.equal(shaped.temperature, 0.7);
    assert.equal(shaped.body['seed'], 7);
    assert.deepEqual(shaped.body['metadata'], { a: 'b' });
    assert.equal(shape({ temperature: null }).body['temperature'], 0.7, 'null is "not set"');
  });

  it('leaves a request it does not change untouched: no copy on the common path', () => {
    const request = requestWith({ temperature: 0.2, max_tokens: 50 });
    assert.equal(applyParamPolicy(request, DEFAULT_PARAM_POLICY), request);
  });

  it('refuses each cost-bearing or data-retention field by default, naming it', () => {
    for (const field of [
      'service_tier',
      'web_search_options',
      'audio',
      'modalities',
      'store',
      'prompt_cache_retention',
    ]) {
      const error = refusal({ [field]: field === 'store' ? true : 'x' });
      assert.equal(error.code, 'invalid_request');
      assert.equal(error.status, 400);
      assert.equal(error.param, field);
      assert.match(error.message, new RegExp(`^${field} is not accepted for model-b`));
    }
    assert.equal(shape({ store: null }).body['store'], null, 'a null is not a request for the feature');
    // Values that ask for nothing beyond the standard service pass: clients that spell out the default work.
    assert.equal(shape({ store: false }).body['store'], false);
    assert.equal(shape({ service_tier: 'default' }).body['service_tier'], 'default');
    assert.deepEqual(shape({ modalities: ['text'] }).body['modalities'], ['text']);
    assert.equal(
      refusal({ service_tier: 'auto' }).param,
      'service_tier',
      '"auto" follows the provider project’s setting, which may be a paid tier',
    );
    assert.equal(refusal({ modalities: ['text', 'audio'] }).param, 'modalities');
    assert.equal(refusal({ store: 'false' }).param, 'store', 'only the JSON false');
  });

  it('drops, renames and defaults for a reasoning model', () => {
    const reasoning = policy({
      drop: ['temperature', 'top_p'],
      rename: [['max_tokens', 'max_completion_tokens']],
      defaults: [['reasoning_effort', 'low']],
    });
    const shaped = shape({ temperature: 1.2, top_p: 0.5, max_tokens: 300, seed: 1 }, reasoning);
    const sent = wire(shaped);
    assert.equal('temperature' in sent, false);
    assert.equal(shaped.temperature, undefined, 'the typed field follows the body');
    assert.equal('top_p' in sent, false);
    assert.equal('max_tokens' in sent, false);
    assert.equal(shaped.body['max_completion_tokens'], 300);
    assert.equal(shaped.body['reasoning_effort'], 'low');
    assert.equal(shaped.body['seed'], 1);
    assert.equal(shape({ reasoning_effort: 'high' }, reasoning).body['reasoning_effort'], 'high');
    const both = shape({ max_tokens: 300, max_completion_tokens: 200 }, reasoning);
    assert.equal(both.body['max_completion_tokens'], 200, 'a value already under the new name wins');
    assert.equal('max_tokens' in wire(both), false);
  });

  it('never changes the client’s own body object', () => {
    const request = requestWith({ temperature: 1, store: null });
    const before = structuredClone(request.body);
    applyParamPolicy(request, policy({ drop: ['temperature', 'store'] }));
    assert.deepEqual(request.body, before);
  });

  it('allow-list mode: only listed fields pass; others are refused, or dropped when the operator says so', () => {
    const strict = policy({ allow: new Set(['max_tokens', 'temperature']), deny: [] });
    const shaped = shape(
      { max_tokens: 10, temperature: 0.3, stream_options: { include_usage: true } },
      strict,
    );
    assert.equal(shaped.body['max_tokens'], 10);
    assert.deepEqual(shaped.body['stream_options'], { include_usage: true }, 'the gateway’s own fields pass');
    const error = refusal({ max_tokens: 10, logit_bias: {} }, strict);
    assert.equal(error.param, 'logit_bias');
    const quiet = policy({ allow: new Set(['max_tokens']), unlisted: 'drop', deny: [], defaults: [] });
    const dropped = shape({ max_tokens: 10, logit_bias: {}, user: 'u' }, quiet);
    assert.deepEqual(Object.keys(wire(dropped)).sort(), ['max_tokens', 'messages', 'model']);
    const renamed = policy({
      allow: new Set<string>(),
      rename: [['max_tokens', 'max_completion_tokens']],
      deny: [],
    });
    assert.equal(
      shape({ max_tokens: 5 }, renamed).body['max_completion_tokens'],
      5,
      'a rename source is allowed',
    );
  });
});
