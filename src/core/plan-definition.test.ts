import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, parseConfig } from '../config/load-config.ts';

describe('plan definition (one table: type, file schema, overrides, defaults)', () => {
  it('every default plan carries an included quota, an overage rate and a cap', () => {
    const config = parseConfig({}, {});
    const starter = config.plans.get('starter');
    assert.equal(starter?.monthlyAllowanceMicros, 20_000_000);
    assert.equal(starter?.overageBasisPoints, 12_000);
    assert.equal(starter?.defaultOverageCapMicros, 50_000_000);
    assert.equal(config.plans.get('free_trial')?.overageBasisPoints, 0);
    assert.equal(config.plans.get('enterprise')?.defaultOverageCapMicros, null);
  });

  it('the file overrides each field by its YAML key; null and `unlimited` mean no limit', () => {
    const config = parseConfig(
      {
        plans: {
          pro: {
            overage_price_multiplier: 1.25,
            overage_cap_usd: 'unlimited',
            max_keys: null,
            daily_tokens: 'unlimited',
            name: 'Pro+',
            purchasable: false,
          },
          starter: { overage_cap_usd: 0 },
        },
      },
      {},
    );
    const pro = config.plans.get('pro');
    assert.equal(pro?.overageBasisPoints, 12_500);
    assert.equal(pro?.defaultOverageCapMicros, null);
    assert.equal(pro?.maxActiveKeys, null);
    assert.equal(pro?.dailyTokens, null);
    assert.equal(pro?.name, 'Pro+');
    assert.equal(pro?.purchasable, false);
    assert.equal(pro?.requestsPerMinute, 300, 'a key left out keeps the default');
    assert.equal(config.plans.get('starter')?.defaultOverageCapMicros, 0);
  });

  it('an unknown plan field or a bad value is named', () => {
    assert.throws(
      () => parseConfig({ plans: { starter: { overage_rate: 2 } } }, {}),
      (error: unknown) =>
        error instanceof ConfigError && /plans\.starter\.overage_rate: unknown field/.test(error.message),
    );
    assert.throws(
      () => parseConfig({ plans: { starter: { overage_price_multiplier: -1 } } }, {}),
      (error: unknown) =>
        error instanceof ConfigError &&
        /plans\.starter\.overage_price_multiplier: must be a non-negative/.test(error.message),
    );
  });
});
