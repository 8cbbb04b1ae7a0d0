import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChatMessage } from '../../core/chat-types.ts';
import { countPromptTokens } from '../../core/count-tokens.ts';
import { MIN_CACHED_PROMPT, PREFIX_STEP, PREFIX_TTL_MS, PrefixCache } from './prefix-cache.ts';

const system = (words: number): ChatMessage => ({
  role: 'system',
  content: Array.from({ length: words }, (_, i) => `rule${i % 50} applies`).join(' '),
});
const ask = (question: string): ChatMessage => ({ role: 'user', content: question });

describe("the simulator's prompt cache", () => {
  it('caches a long prompt: the same prefix again is a hit in 128-token steps, never more than the prompt', () => {
    let now = 1_000;
    const cache = new PrefixCache(() => now);
    const first = [system(1_500), ask('what is the first rule?')];
    const tokens = countPromptTokens(first);
    assert.ok(tokens > 3_000);
    assert.equal(cache.use('acct_a', first, undefined, tokens), 0);
    now += 1_000;
    const second = [system(1_500), ask('and the second one, please?')];
    const secondTokens = countPromptTokens(second);
    const hit = cache.use('acct_a', second, undefined, secondTokens);
    assert.ok(hit >= MIN_CACHED_PROMPT && hit % PREFIX_STEP === 0, `hit ${hit}`);
    assert.ok(hit <= secondTokens && hit > secondTokens - 2 * PREFIX_STEP, `hit ${hit} of ${secondTokens}`);
  });

  it('is per account, skips short prompts, and forgets after its lifetime', () => {
    let now = 0;
    const cache = new PrefixCache(() => now);
    const prompt = [system(1_500)];
    const tokens = countPromptTokens(prompt);
    cache.use('acct_a', prompt, undefined, tokens);
    assert.equal(cache.use('acct_b', prompt, undefined, tokens), 0);
    now += PREFIX_TTL_MS - 1;
    assert.ok(cache.use('acct_a', prompt, undefined, tokens) > 0);
    now += PREFIX_TTL_MS + 1;
    assert.equal(cache.use('acct_a', prompt, undefined, tokens), 0);
    const short = [system(100)];
    cache.use('acct_a', short, undefined, countPromptTokens(short));
    assert.equal(cache.use('acct_a', short, undefined, countPromptTokens(short)), 0);
  });

  it('keeps bounded memory: expired prefixes are dropped as new ones come', () => {
    let now = 0;
    const cache = new PrefixCache(() => now);
    const prompt = [system(1_500)];
    const tokens = countPromptTokens(prompt);
    for (let i = 0; i < 50; i++) cache.use(`acct_${i}`, prompt, undefined, tokens);
    const full = cache.size;
    assert.ok(full > 0);
    now += PREFIX_TTL_MS + 1;
    cache.use('acct_new', prompt, undefined, tokens);
    assert.ok(cache.size < full / 10, `${cache.size} of ${full}`);
  });
});
