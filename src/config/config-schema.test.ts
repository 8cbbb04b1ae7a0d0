import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, parseConfig } from './load-config.ts';
import { fieldPath } from '../shared/schema-primitives.ts';

/** The one message start-up would print for this file and environment. */
function messageOf(yaml: Record<string, unknown>, env: Record<string, string> = {}): string {
  try {
    parseConfig(yaml, env);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.message;
  }
  assert.fail('the configuration was accepted');
}

const openai = (extra: Record<string, unknown> = {}) => ({
  providers: [{ id: 'up', type: 'openai', base_url: 'https://api.example/v1', ...extra }],
});

describe('configuration schema', () => {
  it('an option of another provider type is an unknown field of this one, named by its path', () => {
    assert.equal(
      messageOf(openai({ chunk_interval_ms: 5 })),
      'providers[0].chunk_interval_ms: unknown field',
    );
    assert.equal(
      messageOf({ providers: [{ id: 'sim', type: 'simulator', base_url: 'https://x' }] }),
      'providers[0].base_url: unknown field',
    );
  });

  it('a bad value of a provider’s own option is refused by its plug-in’s schema, naming the field', () => {
    assert.equal(
      messageOf({ providers: [{ id: 'sim', type: 'simulator', first_token_ms: -5 }] }),
      'providers[0].first_token_ms: must be a whole number from 0 to 9007199254740991',
    );
    assert.equal(messageOf(openai({ base_url: 'ftp://x' })), 'providers[0].base_url: must be an http(s) URL');
    assert.equal(
      messageOf(openai({ headers: { 'x-team': 7 } })),
      'providers[0].headers.x-team: must be a non-empty string',
    );
  });

  it('an unknown provider type lists the registered ones', () => {
    assert.equal(
      messageOf({ providers: [{}, { id: 'up', type: 'grpc', base_url: 'https://x' }] }),
      'providers[0].id: must be a non-empty string',
    );
    assert.equal(
      messageOf({ providers: [{ id: 'up', type: 'grpc', base_url: 'https://x' }] }),
      'providers[0].type: must be one of openai, anthropic, gemini, simulator',
    );
  });

  it('a key variable that is not set is named with the field that names it', () => {
    assert.equal(
      messageOf(openai({ api_key_env: 'UP_KEY' }), { OTHER: 'x' }),
      'providers[0].api_key_env: environment variable UP_KEY is not set',
    );
    assert.equal(messageOf(openai({ api_key_env: 'UP_KEY' }), { UP_KEY: '' }).includes('UP_KEY'), true);
  });

  it('a bad price names the price', () => {
    assert.equal(
      messageOf({ models: { 'model-b': { price: { output: 'cheap' } } } }),
      'models.model-b.price.output: must be a non-negative number of USD',
    );
    assert.equal(
      messageOf({ plans: { starter: { monthly_price_usd: -20 } } }),
      'plans.starter.monthly_price_usd: must be a non-negative number of USD',
    );
    const priced = parseConfig({ models: { 'model-b': { price: { single: 0.25 } } } }, {});
    assert.equal(priced.models.get('model-b')?.inputMicrosPerMillion, 250_000);
    assert.equal(priced.models.get('model-b')?.outputMicrosPerMillion, 250_000);
  });

  it('a provider id used twice, the built-in simulator’s included, is refused', () => {
    assert.equal(
      messageOf({ providers: [{ id: 'simulator', type: 'simulator' }] }),
      'providers[0].id: duplicate provider id simulator',
    );
  });

  it('product constants default to the spec’s values and can be set', () => {
    const defaults = parseConfig({}, {});
    assert.equal(defaults.trialCreditMicros, 1_000_000, 'the spec: USD 1');
    assert.equal(defaults.trialDays, 14, 'the spec: 14 days');
    assert.equal(defaults.retentionDays, 90, 'the spec: 90 days');
    assert.equal(defaults.maxMessages, 2_048);
    const set = parseConfig(
      {
        trial: { credit_usd: 2.5, days: 30 },
        retention: { request_log_days: 180 },
        requests: { max_messages: 100 },
      },
      {},
    );
    assert.equal(set.trialCreditMicros, 2_500_000);
    assert.equal(set.trialDays, 30);
    assert.equal(set.retentionDays, 180);
    assert.equal(set.maxMessages, 100);
    assert.equal(
      messageOf({ trial: { days: 0 } }),
      'trial.days: must be a whole number from 1 to 9007199254740991',
    );
    assert.equal(messageOf({ requests: { max: 1 } }), 'requests.max: unknown field');
  });

  it('the built-in simulator is paced by the top-level simulator block; an empty block keeps the defaults', () => {
    const paced = parseConfig({ simulator: { chunk_interval_ms: 3 } }, {});
    assert.deepEqual(paced.providers.get('simulator')?.options, { chunkIntervalMs: 3, firstTokenMs: 0 });
    const empty = parseConfig({ simulator: null, timeouts: null }, {});
    assert.deepEqual(empty.providers.get('simulator')?.options, { chunkIntervalMs: 20, firstTokenMs: 0 });
    assert.equal(empty.timeouts.connectMs, 5_000);
  });

  it('environment variables are named as they are spelled', () => {
    assert.equal(
      messageOf({}, { TOLLGATE_BODY_LIMIT: '12' }),
      'TOLLGATE_BODY_LIMIT: must be a whole number from 1024 to 9007199254740991',
    );
    assert.equal(messageOf({}, { PUBLIC_URL: 'example.com' }), 'PUBLIC_URL: must be an http(s) URL');
    assert.equal(
      messageOf({}, { STRIPE_SECRET_KEY: 'sk' }),
      'STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET must be set together',
    );
  });

  it('a field’s path reads as the YAML spells it', () => {
    assert.equal(
      fieldPath(['models', 'model-b', 'deployments', 0, 'provider']),
      'models.model-b.deployments[0].provider',
    );
    assert.equal(fieldPath(['providers', 2]), 'providers[2]');
    assert.equal(fieldPath(['PORT']), 'PORT');
  });
});
