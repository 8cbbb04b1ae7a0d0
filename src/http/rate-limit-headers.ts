import type { LimitState, RateLimits } from '../core/rate-limits.ts';

/**
 * A duration as OpenAI writes `x-ratelimit-reset-*` (Go's duration format): `20ms`, `1.5s`, `6s`, `1m0s`,
 * `1h2m3s`, `0s`; rounded up to the millisecond, so a client that waits that long finds the room free.
 */
export function formatReset(ms: number): string {
  const total = Math.max(0, Math.ceil(ms));
  if (total === 0) return '0s';
  if (total < 1000) return `${total}ms`;
  const hours = Math.floor(total / 3_600_000);
  const minutes = Math.floor((total % 3_600_000) / 60_000);
  const secondsMs = total % 60_000;
  const seconds =
    secondsMs % 1000 === 0 ? String(secondsMs / 1000) : (secondsMs / 1000).toFixed(3).replace(/0+$/, '');
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}

// The names as constants: built per answer, they would be new strings for Node to check and join each time.
const REQUESTS = [
  'x-ratelimit-limit-requests',
  'x-ratelimit-remaining-requests',
  'x-ratelimit-reset-requests',
];
const TOKENS = ['x-ratelimit-limit-tokens', 'x-ratelimit-remaining-tokens', 'x-ratelimit-reset-tokens'];

function add(headers: Record<string, string>, names: readonly string[], state: LimitState | undefined): void {
  if (!state) return;
  headers[names[0]!] = String(state.limit);
  headers[names[1]!] = String(Math.max(0, state.remaining));
  headers[names[2]!] = formatReset(state.resetMs);
}

/** A new header map with the x-ratelimit-* headers of an admission or a refusal (unlimited dimensions are left out). */
export function rateLimitHeaders(limits: RateLimits): Record<string, string> {
  const headers: Record<string, string> = {};
  add(headers, REQUESTS, limits.requests);
  add(headers, TOKENS, limits.tokens);
  return headers;
}
