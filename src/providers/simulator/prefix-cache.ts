import { createHash, type Hash } from 'node:crypto';
import type { ChatMessage, ToolDefinition } from '../../core/chat-types.ts';

/** Prompts shorter than this are never cached (OpenAI's automatic caching starts at 1,024 tokens). */
export const MIN_CACHED_PROMPT = 1_024;
/** A cached prefix grows in steps of this many tokens. */
export const PREFIX_STEP = 128;
/** How long a prefix stays cached after its last use: a few minutes, like the upstreams' default caches. */
export const PREFIX_TTL_MS = 5 * 60_000;
/** The most prefixes kept at once; the least recently used go first. */
const MAX_ENTRIES = 20_000;

/**
 * The simulator's prompt cache, in memory and per account (as an upstream caches per organisation): a prompt of
 * at least MIN_CACHED_PROMPT tokens is cached at every PREFIX_STEP boundary from there, and a later prompt that
 * begins with a cached prefix reports the longest such prefix as cached tokens. Only digests are kept, never
 * text. Bounded: expired prefixes are dropped as they are found, and past MAX_ENTRIES the least recently used.
 */
export class PrefixCache {
  readonly #expires = new Map<string, number>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  get size(): number {
    return this.#expires.size;
  }

  /**
   * The cached tokens of this prompt (0, or a multiple of PREFIX_STEP of at least MIN_CACHED_PROMPT, never more
   * than `promptTokens`), and the prompt's prefixes cached for the next request.
   */
  use(
    scope: string,
    messages: readonly ChatMessage[],
    tools: readonly ToolDefinition[] | undefined,
    promptTokens: number,
  ): number {
    if (promptTokens < MIN_CACHED_PROMPT) return 0;
    const now = this.#now();
    let hit = 0;
    for (const [length, key] of prefixKeys(scope, messages, tools, promptTokens)) {
      const expires = this.#expires.get(key);
      if (expires !== undefined && expires > now) hit = length;
      // Refreshed as most recently used: deleted and set again, it moves to the end of the map's order.
      this.#expires.delete(key);
      this.#expires.set(key, now + PREFIX_TTL_MS);
    }
    this.#evict(now);
    return hit;
  }

  #evict(now: number): void {
    for (const [key, expires] of this.#expires) {
      if (this.#expires.size <= MAX_ENTRIES && expires > now) break;
      this.#expires.delete(key);
    }
  }
}

/** Characters per cached step: a prompt is hashed by characters, which is quick at any length. */
const STEP_CHARS = 512;

/**
 * The prompt's prefix digests, each with the tokens it stands for: the prompt's text is cut every STEP_CHARS
 * characters, and a cut's tokens are its share of the prompt's (`promptTokens` × its characters ÷ the prompt's),
 * rounded down to a PREFIX_STEP multiple; only cuts worth at least MIN_CACHED_PROMPT tokens are given.
 */
function* prefixKeys(
  scope: string,
  messages: readonly ChatMessage[],
  tools: readonly ToolDefinition[] | undefined,
  promptTokens: number,
): Generator<[number, string]> {
  // Tools come first, then the messages in order, as the upstreams order a cached prefix.
  const text = JSON.stringify([tools ?? [], messages.map((m) => [m.role, m.content, m.tool_calls ?? null])]);
  const hash: Hash = createHash('sha256').update(scope).update('\u0000');
  for (let at = 0; at + STEP_CHARS <= text.length; at += STEP_CHARS) {
    hash.update(text.slice(at, at + STEP_CHARS));
    const end = at + STEP_CHARS;
    const tokens = Math.floor((promptTokens * end) / text.length / PREFIX_STEP) * PREFIX_STEP;
    if (tokens >= MIN_CACHED_PROMPT) yield [tokens, hash.copy().digest('base64url')];
  }
}
