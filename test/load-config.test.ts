import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { DEFAULT_PARAM_POLICY } from '../src/config/defaults.ts';
import { ConfigError, loadConfig, parseConfig } from '../src/config/load-config.ts';

const fails = (yaml: Record<string, unknown>, field: RegExp, env: Record<string, string> = {}): void => {
  assert.throws(
    () => parseConfig(yaml, env),
    (error: unknown) => error instanceof ConfigError && field.test(error.message),
  );
};

describe('configuration', () => {
  it('defaults: the six models on the simulator, the four plans with the spec’s limits', () => {
    const config = parseConfig({}, {});
    assert.deepEqual(
      [...config.models.keys()],
      ['model-a', 'model-b', 'model-c', 'model-d', 'model-e', 'model-f'],
    );
    assert.equal(config.models.get('model-a')?.inputMicrosPerMillion, 3_500_000);
    assert.equal(config.models.get('model-a')?.outputMicrosPerMillion, 18_000_000);
    assert.equal(config.models.get('model-b')?.inputMicrosPerMillion, 130_000);
    assert.equal(config.models.get('model-e')?.contextWindow, 32_768);
    assert.equal(config.plans.get('pro')?.requestsPerMinute, 300);
    assert.equal(config.databaseUrl, 'sqlite:./data/tollgate.db');
    assert.equal(config.port, 8080);
  });

  it('maps models to providers with secrets from the environment', () => {
    const config = parseConfig(
      {
        providers: [{ id: 'up', type: 'openai', base_url: 'https://api.example/v1/', api_key_env: 'UP_KEY' }],
        models: {
          'model-b': { deployments: [{ provider: 'up', model: 'm', weight: 3 }], fallbacks: ['model-f'] },
        },
        plans: { starter: { monthly_price_usd: 25, requests_per_minute: 100 } },
      },
      { UP_KEY: 'secret' },
    );
    assert.equal(config.providers.get('up')?.apiKey, 'secret');
    assert.equal(config.providers.get('up')?.baseUrl, 'https://api.example/v1');
    assert.deepEqual(config.models.get('model-b')?.deployments, [
      { id: 'up/m', provider: 'up', upstreamModel: 'm', weight: 3, params: DEFAULT_PARAM_POLICY },
    ]);
    assert.equal(config.plans.get('starter')?.monthlyPriceMicros, 25_000_000);
    assert.equal(config.plans.get('starter')?.requestsPerMinute, 100);
  });

  it('a bad file names the field at fault', () => {
    fails(
      {
        providers: [{ id: 'up', type: 'openai', base_url: 'https://x' }],
        models: { 'model-b': { deployments: [{ provider: 'nope', model: 'm' }] } },
      },
      /models\.model-b\.deployments\[0\]\.provider: unknown provider id nope/,
    );
    fails(
      { providers: [{ id: 'up', type: 'openai', base_url: 'https://x', api_key_env: 'MISSING' }] },
      /providers\[0\]\.api_key_env: environment variable MISSING is not set/,
    );
    fails({ models: { 'model-a': { price: { input: -1 } } } }, /models\.model-a\.price\.input/);
    fails(
      { models: { 'model-z': { deployments: [{ provider: 'simulator', model: 'z' }] } } },
      /models\.model-z: a model outside the built-in catalog needs price and context_window/,
    );
    fails({ providers: [{ id: 'up', type: 'grpc', base_url: 'https://x' }] }, /providers\[0\]\.type/);
    fails({ models: { 'model-b': { fallbacks: ['model-q'] } } }, /models\.model-b\.fallbacks/);
    fails({ timeouts: { connect_ms: 'soon' } }, /timeouts\.connect_ms/);
    fails({ plans: { gold: {} } }, /plans\.gold: unknown plan/);
    fails({ colour: 'blue' }, /colour: unknown field/);
    fails({}, /PORT/, { PORT: 'eighty' });
  });

  it('a deployment’s params: drop, rename, defaults, deny and allow-list, with the spec’s temperature kept', () => {
    const policyOf = (params: Record<string, unknown>) =>
      parseConfig(
        {
          providers: [{ id: 'up', type: 'openai', base_url: 'https://x' }],
          models: { 'model-b': { deployments: [{ provider: 'up', model: 'm', params }] } },
        },
        {},
      ).models.get('model-b')!.deployments[0]!.params;
    const reasoning = policyOf({ drop: ['temperature'], rename: { max_tokens: 'max_completion_tokens' } });
    assert.deepEqual(reasoning.drop, ['temperature']);
    assert.deepEqual(reasoning.rename, [['max_tokens', 'max_completion_tokens']]);
    assert.deepEqual(reasoning.defaults, [], 'a dropped temperature gets no default');
    assert.deepEqual(reasoning.deny, DEFAULT_PARAM_POLICY.deny, 'the built-in deny-list stays');
    const warm = policyOf({ defaults: { temperature: 1, seed: 7 } });
    assert.deepEqual(warm.defaults, [
      ['temperature', 1],
      ['seed', 7],
    ]);
    const lenient = policyOf({ drop: ['store', 'service_tier'] });
    assert.ok(
      !lenient.deny.includes('store') && lenient.deny.includes('audio'),
      'a dropped field is not denied',
    );
    assert.deepEqual(lenient.defaults, [['temperature', 0.7]]);
    assert.deepEqual(policyOf({ deny: [] }).deny, []);
    const strict = policyOf({ allow: ['max_tokens', 'store'], unlisted: 'drop' });
    assert.deepEqual([...strict.allow!], ['max_tokens', 'store']);
    assert.equal(strict.unlisted, 'drop');
    assert.ok(!strict.deny.includes('store'), 'an allowed field is not denied');
    assert.deepEqual(strict.defaults, [], 'temperature is outside the allow-list');

    const at = 'models\\.model-b\\.deployments\\[0\\]\\.params';
    const bad = (params: unknown, message: string) =>
      fails(
        {
          providers: [{ id: 'up', type: 'openai', base_url: 'https://x' }],
          models: { 'model-b': { deployments: [{ provider: 'up', model: 'm', params }] } },
        },
        new RegExp(`^${at}${message}`),
      );
    bad({ drop: 'temperature' }, '\\.drop: must be a list');
    bad({ drop: ['messages'] }, '\\.drop\\[0\\]: messages is set by the gateway');
    bad({ defaults: { temperature: 3 } }, '\\.defaults\\.temperature: must be a number from 0 to 2');
    bad({ deny: ['store'], drop: ['store'] }, '\\.deny: store is in drop too');
    bad({ rename: { max_tokens: 7 } }, '\\.rename\\.max_tokens: must be a non-empty string');
    bad({ unlisted: 'drop' }, '\\.unlisted: only with allow');
    bad({ allow: [], unlisted: 'ignore' }, '\\.unlisted: must be one of refuse, drop');
    bad({ drop: ['seed'], defaults: { seed: 1 } }, '\\.defaults\\.seed: a default for a field');
    bad({ forbid: ['x'] }, '\\.forbid: unknown field');
  });

  it('a file that cannot be read, is not YAML or is empty: the message names the file and what named it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-config-'));
    const refused = (env: Record<string, string>, message: RegExp, from?: string): void => {
      const file = from === undefined ? undefined : { path: env['FILE']!, source: from };
      assert.throws(
        () => loadConfig(from === undefined ? { TOLLGATE_CONFIG: env['FILE']! } : {}, file),
        (error: unknown) =>
          error instanceof ConfigError && error.file === env['FILE'] && message.test(error.message),
      );
    };
    const missing = join(dir, 'missing.yaml');
    refused({ FILE: missing }, /^cannot read .*missing\.yaml \(from TOLLGATE_CONFIG\): ENOENT/);
    refused({ FILE: missing }, /^cannot read .*missing\.yaml \(from --config\): ENOENT/, '--config');
    const broken = join(dir, 'broken.yaml');
    writeFileSync(broken, 'routing:\n  max_attempts: 2\n  max_attempts: 3\n');
    refused({ FILE: broken }, /broken\.yaml:3:3: YAML syntax error: Map keys must be unique$/);
    for (const text of ['', '\n\n', '# nothing yet\n', '---\n']) {
      const empty = join(dir, 'empty.yaml');
      writeFileSync(empty, text);
      refused({ FILE: empty }, /empty\.yaml \(from TOLLGATE_CONFIG\) is empty: /);
    }
    const list = join(dir, 'list.yaml');
    writeFileSync(list, '- a\n');
    refused({ FILE: list }, /list\.yaml: not a mapping$/);
    const braces = join(dir, 'braces.yaml');
    writeFileSync(braces, '{}\n');
    assert.equal(loadConfig({ TOLLGATE_CONFIG: braces }).port, 8080, 'an explicit empty mapping is a choice');
  });

  it('a bad file stops the real process at start-up with one message and exit code 2', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-config-'));
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'models:\n  model-b:\n    deployments: [{ provider: ghost, model: m }]\n');
    const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
    const result = spawnSync(process.execPath, [main], {
      env: { ...process.env, TOLLGATE_CONFIG: file, DATABASE_URL: `sqlite:${join(dir, 't.db')}` },
      encoding: 'utf8',
    });
    assert.equal(result.status, 2);
    assert.match(
      result.stderr,
      /^tollgate: configuration error: models\.model-b\.deployments\[0\]\.provider: unknown provider id ghost\n$/,
    );
  });
});
