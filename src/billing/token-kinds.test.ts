import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { geminiUsage } from '../providers/gemini/convert-gemini.ts';
import { anthropicUsage } from '../providers/anthropic/convert-anthropic.ts';
import { kindsCostMicros, worstCaseMicros } from './pricing.ts';
import { kindsOfAnthropic, kindsOfGemini, kindsOfUsage, usageOfKinds } from './token-kinds.ts';

// Usage objects in each upstream's documented shape.
describe('token kinds from each upstream', () => {
  it('OpenAI chat: prompt_tokens includes the cached part; completion_tokens includes reasoning', () => {
    const kinds = kindsOfUsage({
      prompt_tokens: 2_006,
      completion_tokens: 300,
      total_tokens: 2_306,
      prompt_tokens_details: { cached_tokens: 1_920, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 256,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    });
    assert.deepEqual(kinds, {
      input: 86,
      cachedInput: 1_920,
      cacheWrite5m: 0,
      cacheWrite1h: 0,
      output: 300,
      reasoning: 256,
    });
  });

  it('Anthropic: input_tokens excludes cache reads and writes; cache_creation splits writes by lifetime', () => {
    const usage = {
      input_tokens: 50,
      cache_read_input_tokens: 100_000,
      cache_creation_input_tokens: 3_000,
      cache_creation: { ephemeral_5m_input_tokens: 2_000, ephemeral_1h_input_tokens: 1_000 },
      output_tokens: 503,
    };
    assert.deepEqual(kindsOfAnthropic(usage), {
      input: 50,
      cachedInput: 100_000,
      cacheWrite5m: 2_000,
      cacheWrite1h: 1_000,
      output: 503,
      reasoning: 0,
    });
    // As canonical usage, on OpenAI's convention: the prompt includes every cached and written token.
    const canonical = anthropicUsage(usage);
    assert.equal(canonical.prompt_tokens, 103_050);
    assert.deepEqual(canonical.prompt_tokens_details, {
      cached_tokens: 100_000,
      cache_write_tokens: 3_000,
      cache_write_1h_tokens: 1_000,
    });
    assert.deepEqual(kindsOfUsage(canonical), kindsOfAnthropic(usage));
    // Without the split (older answers), every write is the default 5-minute kind.
    assert.equal(kindsOfAnthropic({ input_tokens: 1, cache_creation_input_tokens: 7 }).cacheWrite5m, 7);
    assert.equal(kindsOfAnthropic({ input_tokens: 3, cache_read_input_tokens: null }).input, 3);
  });

  it('Gemini: promptTokenCount includes cachedContentTokenCount; candidatesTokenCount excludes thoughts', () => {
    const metadata = {
      promptTokenCount: 4_200,
      cachedContentTokenCount: 4_096,
      candidatesTokenCount: 60,
      thoughtsTokenCount: 140,
      totalTokenCount: 4_400,
    };
    assert.deepEqual(kindsOfGemini(metadata), {
      input: 104,
      cachedInput: 4_096,
      cacheWrite5m: 0,
      cacheWrite1h: 0,
      output: 200,
      reasoning: 140,
    });
    assert.deepEqual(geminiUsage(metadata), {
      prompt_tokens: 4_200,
      completion_tokens: 200,
      total_tokens: 4_400,
      prompt_tokens_details: { cached_tokens: 4_096 },
      completion_tokens_details: { reasoning_tokens: 140 },
    });
  });

  it('details that claim more than the totals are cut to them (never a negative input)', () => {
    const kinds = kindsOfUsage({
      prompt_tokens: 10,
      completion_tokens: 5,
      total_tokens: 15,
      prompt_tokens_details: { cached_tokens: 40 },
      completion_tokens_details: { reasoning_tokens: 9 },
    });
    assert.equal(kinds.input, 0);
    assert.equal(kinds.cachedInput, 10);
    assert.equal(kinds.reasoning, 5);
  });

  it('plain usage stays plain: no details appear where there is nothing to tell', () => {
    assert.deepEqual(
      usageOfKinds(kindsOfUsage({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 })),
      {
        prompt_tokens: 3,
        completion_tokens: 4,
        total_tokens: 7,
      },
    );
  });
});

describe('prices per kind', () => {
  // Anthropic-like prices, µUSD per million: input $3, output $15, cache read $0.30, 5-minute write $3.75, 1-hour $6.
  const PRICES = {
    inputMicrosPerMillion: 3_000_000,
    outputMicrosPerMillion: 15_000_000,
    cachedInputMicrosPerMillion: 300_000,
    cacheWriteMicrosPerMillion: 3_750_000,
    cacheWrite1hMicrosPerMillion: 6_000_000,
  };

  it('sums each kind at its price, rounding up once', () => {
    const kinds = {
      input: 50,
      cachedInput: 100_000,
      cacheWrite5m: 2_000,
      cacheWrite1h: 1_000,
      output: 503,
      reasoning: 0,
    };
    // 150 + 30,000 + 7,500 + 6,000 + 7,545 µUSD
    assert.equal(kindsCostMicros(PRICES, kinds), 51_195);
    // One token of each: 3 + 0.3 + 3.75 + 6 + 15 = 28.05 → 29
    assert.equal(
      kindsCostMicros(PRICES, {
        input: 1,
        cachedInput: 1,
        cacheWrite5m: 1,
        cacheWrite1h: 1,
        output: 1,
        reasoning: 1,
      }),
      29,
    );
  });

  it('holds every prompt token at the dearest prompt price', () => {
    assert.equal(worstCaseMicros(PRICES, 1_000, 100), 6_000 + 1_500);
    assert.equal(worstCaseMicros({ ...PRICES, cacheWrite1hMicrosPerMillion: 1 }, 1_000, 0), 3_750);
  });
});
