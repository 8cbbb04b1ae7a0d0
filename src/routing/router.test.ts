import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DeploymentConfig, ModelConfig, ParamPolicy, RoutingConfig } from '../core/config.ts';
import { DEFAULT_PARAM_POLICY } from '../config/defaults.ts';
import type { ChatCompletion, ChatRequest } from '../core/chat-types.ts';
import type { EventBatch } from '../core/stream-event.ts';
import { chatRequestOf } from '../core/testing.ts';
import { type Provider, type ProviderCall } from '../core/provider.ts';
import { ProviderError } from '../core/provider-error.ts';
import { GatewayError } from '../core/gateway-error.ts';
import { createSimulatorProvider } from '../providers/simulator/simulator-provider.ts';
import { Router } from './router.ts';

/** What a stand-in upstream does on one call: answer, or throw the given failure. */
type Outcome = 'ok' | ProviderError | Error;

/**
 * A provider stand-in: answers each call from its script (the last outcome repeats) and records the
 * upstream model and request of every call. Stands for the upstream, not for any part of Tollgate.
 */
class ScriptedProvider implements Provider {
  readonly calls: ProviderCall[] = [];
  readonly id: string;
  readonly #script: Outcome[];
  readonly #chunks: number;

  constructor(id: string, script: Outcome[] = ['ok'], chunks = 2) {
    this.id = id;
    this.#script = script;
    this.#chunks = chunks;
  }

  /** Records the call and returns its scripted outcome. */
  #next(call: ProviderCall): Outcome {
    this.calls.push(call);
    return this.#script[Math.min(this.calls.length - 1, this.#script.length - 1)]!;
  }

  complete(call: ProviderCall): Promise<ChatCompletion> {
    const outcome = this.#next(call);
    if (outcome !== 'ok') return Promise.reject(outcome);
    return Promise.resolve({
      id: `from-${this.id}`,
      object: 'chat.completion',
      created: 0,
      model: call.upstreamModel,
      choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
    });
  }

  async *stream(call: ProviderCall): AsyncIterable<EventBatch> {
    const outcome = this.#next(call);
    if (outcome !== 'ok') throw outcome;
    for (let i = 0; i < this.#chunks; i++) yield [{ type: 'text', text: String(i) }];
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

const deployment = (
  provider: string,
  upstreamModel: string,
  weight = 1,
  params: ParamPolicy = DEFAULT_PARAM_POLICY,
): DeploymentConfig => ({ id: `${provider}/${upstreamModel}`, provider, upstreamModel, weight, params });

const model = (id: string, deployments: DeploymentConfig[], fallbacks: string[] = []): ModelConfig => ({
  id,
  description: id,
  contextWindow: 8192,
  maxOutputTokens: 1024,
  defaultMaxTokens: 256,
  inputMicrosPerMillion: 1,
  cachedInputMicrosPerMillion: 1,
  cacheWriteMicrosPerMillion: 1,
  cacheWrite1hMicrosPerMillion: 1,
  outputMicrosPerMillion: 1,
  latencyClass: 'fast',
  deployments,
  fallbacks,
});

const ROUTING: RoutingConfig = {
  maxAttempts: 3,
  retryBaseMs: 1,
  retryMaxMs: 4,
  breakerFailureThreshold: 5,
  breakerCooldownMs: 30_000,
};

const chat = (modelId = 'm'): ChatRequest =>
  chatRequestOf({
    model: modelId,
    messages: [{ role: 'user', content: 'hello' }],
    body: { model: modelId, messages: [{ role: 'user', content: 'hello' }] },
  });

interface Setup {
  models: ModelConfig[];
  providers: ScriptedProvider[];
  routing?: Partial<RoutingConfig>;
  random?: () => number;
  now?: () => number;
}

function createRouter(setup: Setup) {
  const failures: string[][] = [];
  const router = new Router({
    models: new Map(setup.models.map((m) => [m.id, m])),
    providers: new Map(setup.providers.map((p) => [p.id, p])),
    routing: { ...ROUTING, ...setup.routing },
    clock: setup.now ?? (() => 1_000_000),
    events: { upstreamError: (...args) => failures.push(args) },
    random: setup.random ?? (() => 0),
  });
  return { router, failures };
}

const signal = (): AbortSignal => new AbortController().signal;
const unavailable = (status = 503, retryAfterMs?: number): ProviderError =>
  new ProviderError('status', `upstream said ${status}`, { status, retryAfterMs });

/** The GatewayError a promise rejects with. */
async function rejection(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof GatewayError, String(error));
    return error;
  }
  assert.fail('resolved');
}

describe('Router: choosing a deployment', () => {
  it('one deployment: the call goes to it with its upstream model name, and says who answered', async () => {
    const a = new ScriptedProvider('a');
    const { router } = createRouter({ models: [model('m', [deployment('a', 'up-1')])], providers: [a] });
    const answer = await router.wholeAnswer(chat(), signal(), 256);
    assert.equal(answer.result.id, 'from-a');
    assert.equal(answer.deployment, 'a/up-1');
    assert.equal(answer.provider, 'a');
    assert.equal(answer.attempts, 1);
    assert.equal(a.calls[0]!.upstreamModel, 'up-1');
    assert.equal(a.calls[0]!.defaultMaxTokens, 256);
    assert.equal(typeof answer.upstreamStartedAt, 'number');
  });

  it('picks by weight: a draw in the first 3/4 of a 3:1 split goes to the heavier deployment', async () => {
    const pick = async (draw: number): Promise<string> => {
      const { router } = createRouter({
        models: [model('m', [deployment('a', 'heavy', 3), deployment('b', 'light', 1)])],
        providers: [new ScriptedProvider('a'), new ScriptedProvider('b')],
        random: () => draw,
      });
      return (await router.wholeAnswer(chat(), signal(), 256)).deployment;
    };
    assert.equal(await pick(0), 'a/heavy');
    assert.equal(await pick(0.74), 'a/heavy');
    assert.equal(await pick(0.76), 'b/light');
    assert.equal(await pick(0.999), 'b/light');
  });

  it('applies the deployment’s parameter policy to the request it sends', async () => {
    const a = new ScriptedProvider('a');
    const { router } = createRouter({
      models: [
        model('m', [
          deployment('a', 'up', 1, { ...DEFAULT_PARAM_POLICY, drop: ['temperature'], defaults: [] }),
        ]),
      ],
      providers: [a],
    });
    const request = chat();
    request.body['temperature'] = 0.5;
    await router.wholeAnswer(request, signal(), 256);
    assert.equal(a.calls[0]!.request.body['temperature'], undefined);
    assert.equal(a.calls[0]!.request.body['model'], 'm', 'the rest of the body goes as sent');
  });

  it('a deployment whose policy refuses a field sends the request to one that accepts it', async () => {
    const strict = { ...DEFAULT_PARAM_POLICY, deny: ['temperature'] };
    const a = new ScriptedProvider('a');
    const b = new ScriptedProvider('b');
    const { router } = createRouter({
      models: [model('m', [deployment('a', 'strict', 1, strict), deployment('b', 'lenient')])],
      providers: [a, b],
    });
    const request = chat();
    request.body['temperature'] = 0.5;
    const answer = await router.wholeAnswer(request, signal(), 256);
    assert.equal(answer.deployment, 'b/lenient');
    assert.equal(answer.attempts, 1, 'a refusal by policy is not an attempt');
    assert.equal(a.calls.length, 0);
  });

  it('when every deployment’s policy refuses, the refusal is the answer (400 naming the field)', async () => {
    const strict = { ...DEFAULT_PARAM_POLICY, deny: ['temperature'] };
    const { router } = createRouter({
      models: [model('m', [deployment('a', 'strict', 1, strict)])],
      providers: [new ScriptedProvider('a')],
    });
    const request = chat();
    request.body['temperature'] = 0.5;
    const error = await rejection(router.wholeAnswer(request, signal(), 256));
    assert.equal(error.code, 'invalid_request');
    assert.equal(error.param, 'temperature');
  });

  it('a deployment naming an unknown provider is a startup error', () => {
    assert.throws(
      () => createRouter({ models: [model('m', [deployment('ghost', 'x')])], providers: [] }),
      /no provider ghost/,
    );
  });
});

describe('Router: retries and fallbacks', () => {
  it('a failure is retried on the next deployment, and the attempt count says so', async () => {
    const a = new ScriptedProvider('a', [unavailable()]);
    const b = new ScriptedProvider('b');
    const { router, failures } = createRouter({
      models: [model('m', [deployment('a', 'one'), deployment('b', 'two')])],
      providers: [a, b],
    });
    const answer = await router.wholeAnswer(chat(), signal(), 256);
    assert.equal(answer.deployment, 'b/two');
    assert.equal(answer.attempts, 2);
    assert.deepEqual(failures, [['a/one', 'a', '503']]);
  });

  it('with one deployment, the retry goes to it again', async () => {
    const a = new ScriptedProvider('a', [new ProviderError('connect', 'refused'), 'ok']);
    const { router, failures } = createRouter({
      models: [model('m', [deployment('a', 'one')])],
      providers: [a],
    });
    const answer = await router.wholeAnswer(chat(), signal(), 256);
    assert.equal(answer.attempts, 2);
    assert.equal(a.calls.length, 2);
    assert.deepEqual(failures, [['a/one', 'a', 'connect']], 'a failure without a status is named by kind');
  });

  it('after the model’s own deployments, its fallback models are tried in order', async () => {
    const a = new ScriptedProvider('a', [unavailable()]);
    const b = new ScriptedProvider('b', [unavailable()]);
    const c = new ScriptedProvider('c');
    const { router } = createRouter({
      models: [
        model('m', [deployment('a', 'one')], ['f1', 'f2']),
        model('f1', [deployment('b', 'two')]),
        model('f2', [deployment('c', 'three')]),
      ],
      providers: [a, b, c],
    });
    const answer = await router.wholeAnswer(chat(), signal(), 256);
    assert.equal(answer.deployment, 'c/three');
    assert.equal(answer.attempts, 3);
    assert.equal(c.calls[0]!.upstreamModel, 'three');
  });

  it('gives up after max_attempts with 502 provider_error naming the last failure', async () => {
    const a = new ScriptedProvider('a', [unavailable(503)]);
    const { router } = createRouter({
      models: [model('m', [deployment('a', 'one')])],
      providers: [a],
      routing: { maxAttempts: 3 },
    });
    const error = await rejection(router.wholeAnswer(chat(), signal(), 256));
    assert.equal(error.status, 502);
    assert.equal(error.code, 'provider_error');
    assert.equal(
      error.message,
      'm is unavailable: every deployment failed (last: upstream status 503); retry or switch model',
    );
    assert.equal(a.calls.length, 3, 'exactly max_attempts calls');
  });

  it('our own exception (not a ProviderError) is a 500 at once: not retried, not counted against the upstream', async () => {
    const a = new ScriptedProvider('a', [new RangeError('Maximum call stack size exceeded')]);
    const b = new ScriptedProvider('b');
    const { router, failures } = createRouter({
      models: [model('m', [deployment('a', 'one'), deployment('b', 'two')])],
      providers: [a, b],
      routing: { maxAttempts: 3, breakerFailureThreshold: 1 },
    });
    const error = await rejection(router.wholeAnswer(chat(), signal(), 256, 'acct_1'));
    assert.equal(error.status, 500);
    assert.equal(error.code, 'internal_error');
    assert.doesNotMatch(error.message, /call stack/, 'the exception itself stays in the log');
    assert.equal(a.calls.length, 1, 'the same request would meet it again: no retry');
    assert.equal(b.calls.length, 0);
    assert.deepEqual(failures, [], 'no upstream error is reported');
    assert.equal(router.health()[0]?.['state'], 'closed');
    assert.equal(router.stats()[0]?.requests, 0, 'the deployment window holds upstream attempts only');
  });

  it('the upstream rejecting the request itself (400) is the client’s 400: not retried, text sanitized', async () => {
    const a = new ScriptedProvider('a', [
      new ProviderError('status', 'up-secret-model: messages too long', { status: 400 }),
    ]);
    const b = new ScriptedProvider('b');
    const { router } = createRouter({
      models: [model('m', [deployment('a', 'up-secret-model'), deployment('b', 'two')])],
      providers: [a, b],
    });
    const error = await rejection(router.wholeAnswer(chat(), signal(), 256));
    assert.equal(error.code, 'invalid_request');
    assert.equal(error.message, 'the model rejected the request: m: messages too long');
    assert.equal(b.calls.length, 0);
  });

  it('a client that left stops the attempts: no retry, no upstream error counted', async () => {
    const a = new ScriptedProvider('a', [new ProviderError('aborted', 'client gone')]);
    const b = new ScriptedProvider('b');
    const { router, failures } = createRouter({
      models: [model('m', [deployment('a', 'one'), deployment('b', 'two')])],
      providers: [a, b],
      routing: { breakerFailureThreshold: 1 },
    });
    const error = await rejection(router.wholeAnswer(chat(), signal(), 256));
    assert.equal(error.code, 'internal_error');
    assert.match(error.message, /cancelled by the client/);
    assert.equal(b.calls.length, 0);
    assert.deepEqual(failures, []);
    assert.equal(
      router.health().find((h) => h['deployment'] === 'a/one')?.['state'],
      'closed',
      'an abort is no failure',
    );
  });

  it('an aborted signal during the backoff ends the wait with the cancellation', async () => {
    const controller = new AbortController();
    const a = new ScriptedProvider('a', [unavailable()]);
    const { router } = createRouter({
      models: [model('m', [deployment('a', 'one')])],
      providers: [a],
      routing: { retryBaseMs: 60_000, retryMaxMs: 60_000 },
    });
    const pending = router.wholeAnswer(chat(), controller.signal, 256);
    setImmediate(() => controller.abort());
    const started = performance.now();
    const error = await rejection(pending);
    assert.ok(performance.now() - started < 5_000, 'the 30–60 s backoff was cut short');
    assert.equal(error.code, 'internal_error');
    assert.match(error.message, /cancelled by the client/);
    assert.equal(a.calls.length, 1);
  });

  it('waits out a short Retry-After before the retry', async () => {
    const a = new ScriptedProvider('a', [unavailable(429, 40), 'ok']);
    const { router } = createRouter({
      models: [model('m', [deployment('a', 'one')])],
      providers: [a],
      routing: { retryBaseMs: 1, retryMaxMs: 100 },
    });
    const started = performance.now();
    const answer = await router.wholeAnswer(chat(), signal(), 256);
    assert.ok(performance.now() - started >= 39, 'the retry came after the upstream’s Retry-After');
    assert.equal(answer.attempts, 2);
  });

  it('a Retry-After longer than the backoff ceiling keeps requests away from that deployment', async () => {
    const a = new ScriptedProvider('a', [unavailable(429, 10_000)]);
    const b = new ScriptedProvider('b');
    let now = 1_000_000;
    const { router } = createRouter({
      models: [model('m', [deployment('a', 'one'), deployment('b', 'two')])],
      providers: [a, b],
      now: () => now,
    });
    assert.equal((await router.wholeAnswer(chat(), signal(), 256)).deployment, 'b/two');
    const blocked = router.health().find((h) => h['deployment'] === 'a/one');
    assert.equal(blocked?.['blocked_for_ms'], 10_000);
    now += 5_000;
    await router.wholeAnswer(chat(), signal(), 256);
    assert.equal(a.calls.length, 1, 'not asked again while its Retry-After runs');
    now += 5_000;
    await router.wholeAnswer(chat(), signal(), 256);
    assert.equal(a.calls.length, 2, 'asked again once it has passed');
  });
});

describe('Router: circuit breakers', () => {
  it('skips a deployment whose circuit is open; with none left, 502 "no deployment available"', async () => {
    const a = new ScriptedProvider('a', [unavailable()]);
    const { router } = createRouter({
      models: [model('m', [deployment('a', 'one')])],
      providers: [a],
      routing: { maxAttempts: 1, breakerFailureThreshold: 1 },
    });
    await rejection(router.wholeAnswer(chat(), signal(), 256));
    assert.equal(router.health()[0]?.['state'], 'open');
    const error = await rejection(router.wholeAnswer(chat(), signal(), 256));
    assert.equal(error.code, 'provider_error');
    assert.match(error.message, /\(last: no deployment available\)/);
    assert.equal(a.calls.length, 1, 'the open circuit was not called');
  });

  it('health lists every deployment with its circuit, error rate and latency', async () => {
    const { router } = createRouter({
      models: [
        model('m', [deployment('a', 'one'), deployment('b', 'two')]),
        model('n', [deployment('a', 'three')]),
      ],
      providers: [new ScriptedProvider('a'), new ScriptedProvider('b')],
    });
    await router.wholeAnswer(chat('n'), signal(), 256);
    const health = router.health();
    assert.deepEqual(
      health.map((h) => [h['model'], h['deployment'], h['provider'], h['state']]),
      [
        ['m', 'a/one', 'a', 'closed'],
        ['m', 'b/two', 'b', 'closed'],
        ['n', 'a/three', 'a', 'closed'],
      ],
    );
    assert.equal(typeof health[2]!['latency_ms'], 'number', 'the answered call has a latency');
    assert.equal(health[0]!['latency_ms'], null);
    assert.equal(health[2]!['error_rate'], 0);
  });
});

describe('Router: breakers count only what upstreams do', () => {
  const selfReferencing = {
    $defs: { a: { type: 'object', required: ['x'], properties: { x: { $ref: '#/$defs/a' } } } },
    $ref: '#/$defs/a',
  };

  it('our own exceptions, however many, never open a circuit other accounts share', async () => {
    const a = new ScriptedProvider('a', [new TypeError('boom')]);
    const { router } = createRouter({
      models: [model('m', [deployment('a', 'one')])],
      providers: [a],
      routing: { maxAttempts: 3, breakerFailureThreshold: 5 },
    });
    for (let i = 0; i < 10; i++) await rejection(router.wholeAnswer(chat(), signal(), 256, `acct_${i % 3}`));
    assert.equal(router.health()[0]?.['state'], 'closed');
  });

  it('a schema the simulator refuses is the request’s 400, ten times over, and the circuit stays closed', async () => {
    const simulator = createSimulatorProvider({ id: 'sim', chunkIntervalMs: 0, firstTokenMs: 0 });
    const router = new Router({
      models: new Map([['m', model('m', [deployment('sim', 'one')])]]),
      providers: new Map([['sim', simulator]]),
      routing: ROUTING,
      clock: () => 1_000_000,
    });
    const request = chatRequestOf({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      body: {},
      responseFormat: { type: 'json_schema', json_schema: { name: 'loop', schema: selfReferencing } },
    });
    for (let i = 0; i < 10; i++) {
      const error = await rejection(router.wholeAnswer(request, signal(), 256, 'acct_abuser'));
      assert.equal(error.status, 400);
      assert.equal(error.code, 'invalid_request');
      assert.match(error.message, /JSON schema asks for more than the model generates/);
    }
    assert.equal(router.health()[0]?.['state'], 'closed');
    const answer = await router.wholeAnswer(chat(), signal(), 256, 'acct_other');
    assert.equal(answer.attempts, 1, 'another account is served at once');
  });

  it('an upstream failing one account’s requests only, however often, does not open the circuit', async () => {
    const a = new ScriptedProvider('a', [unavailable(500)]);
    const { router } = createRouter({
      models: [model('m', [deployment('a', 'one')])],
      providers: [a],
      routing: { maxAttempts: 3, breakerFailureThreshold: 5 },
    });
    for (let i = 0; i < 20; i++) await rejection(router.wholeAnswer(chat(), signal(), 256, 'acct_alone'));
    assert.equal(a.calls.length, 60, 'every attempt reached the upstream');
    assert.equal(router.health()[0]?.['state'], 'closed');
    assert.equal(router.health()[0]?.['error_rate'], 1, '/health still says every attempt failed');
  });

  it('an upstream that refuses connections opens its circuit even when one account sends every request', async () => {
    const refused = new ProviderError('connect', 'upstream connection failed (ECONNREFUSED)', {
      beforeSend: true,
    });
    const a = new ScriptedProvider('a', [refused]);
    const { router } = createRouter({
      models: [model('m', [deployment('a', 'one')])],
      providers: [a],
      routing: { maxAttempts: 1, breakerFailureThreshold: 5 },
    });
    for (let i = 0; i < 5; i++) await rejection(router.wholeAnswer(chat(), signal(), 256, 'acct_alone'));
    assert.equal(router.health()[0]?.['state'], 'open');
    assert.equal(a.calls.length, 5);
  });

  it('a dead upstream failing several accounts still opens it after `threshold` failures', async () => {
    const a = new ScriptedProvider('a', [unavailable(500)]);
    const { router } = createRouter({
      models: [model('m', [deployment('a', 'one')])],
      providers: [a],
      routing: { maxAttempts: 1, breakerFailureThreshold: 5 },
    });
    const accounts = ['acct_1', 'acct_2', 'acct_3', 'acct_1', 'acct_2'];
    for (const [index, account] of accounts.entries()) {
      assert.equal(router.health()[0]?.['state'], 'closed', `before failure ${index + 1}`);
      await rejection(router.wholeAnswer(chat(), signal(), 256, account));
    }
    assert.equal(router.health()[0]?.['state'], 'open');
    const skipped = await rejection(router.wholeAnswer(chat(), signal(), 256, 'acct_4'));
    assert.match(skipped.message, /no deployment available/);
    assert.equal(a.calls.length, 5);
  });

  it('two accounts open it: one account’s share of a run counts up to half the threshold', async () => {
    const a = new ScriptedProvider('a', [unavailable(500)]);
    const { router } = createRouter({
      models: [model('m', [deployment('a', 'one')])],
      providers: [a],
      routing: { maxAttempts: 1, breakerFailureThreshold: 5 },
    });
    for (let i = 0; i < 10; i++) await rejection(router.wholeAnswer(chat(), signal(), 256, 'acct_a'));
    await rejection(router.wholeAnswer(chat(), signal(), 256, 'acct_b'));
    assert.equal(router.health()[0]?.['state'], 'closed', 'a counts 3, b 1: 4 of 5');
    await rejection(router.wholeAnswer(chat(), signal(), 256, 'acct_b'));
    assert.equal(router.health()[0]?.['state'], 'open');
  });
});

describe('Router: streams', () => {
  it('returns the first batch of events and the rest to read', async () => {
    const { router } = createRouter({
      models: [model('m', [deployment('a', 'one')])],
      providers: [new ScriptedProvider('a', ['ok'], 3)],
    });
    const opened = await router.openStream({ ...chat(), stream: true }, signal(), 256);
    const answer = opened.result;
    if (answer.lane !== 'events') assert.fail('no fast lane was asked for');
    assert.deepEqual(answer.stream.first, [{ type: 'text', text: '0' }]);
    const rest: string[] = [];
    const failure = await new Promise<unknown>((resolve) =>
      answer.stream.start({
        batch(batch) {
          for (const event of batch) if (event.type === 'text') rest.push(event.text);
          return true;
        },
        end: resolve,
      }),
    );
    assert.equal(failure, undefined);
    assert.deepEqual(rest, ['1', '2']);
  });

  it('a stream that fails before its first chunk is retried on the next deployment', async () => {
    const { router } = createRouter({
      models: [model('m', [deployment('a', 'one'), deployment('b', 'two')])],
      providers: [new ScriptedProvider('a', [unavailable(500)]), new ScriptedProvider('b')],
    });
    const opened = await router.openStream({ ...chat(), stream: true }, signal(), 256);
    assert.equal(opened.deployment, 'b/two');
    assert.equal(opened.attempts, 2);
  });

  it('an empty stream is a protocol failure, retried like any other', async () => {
    const { router, failures } = createRouter({
      models: [model('m', [deployment('a', 'empty'), deployment('b', 'two')])],
      providers: [new ScriptedProvider('a', ['ok'], 0), new ScriptedProvider('b')],
    });
    const opened = await router.openStream({ ...chat(), stream: true }, signal(), 256);
    assert.equal(opened.deployment, 'b/two');
    assert.deepEqual(failures, [['a/empty', 'a', 'protocol']]);
  });
});
