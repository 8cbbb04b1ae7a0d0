import type { Admission, LimitState } from '../limits/limiter.ts';

/** A duration in the convention's reset format: `20ms`, `1.5s`, `6m0s`. */
export function formatReset(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  if (ms < 60_000) return `${Math.round(ms / 100) / 10}s`;
  return `${Math.floor(ms / 60_000)}m${Math.round((ms % 60_000) / 1000)}s`;
}

function add(
  headers: Record<string, string>,
  kind: 'requests' | 'tokens',
  state: LimitState | undefined,
): void {
  if (!state) return;
  headers[`x-ratelimit-limit-${kind}`] = String(state.limit);
  headers[`x-ratelimit-remaining-${kind}`] = String(Math.max(0, state.remaining));
  headers[`x-ratelimit-reset-${kind}`] = formatReset(state.resetMs);
}

/** The x-ratelimit-* headers of an admission (unlimited dimensions are left out). */
export function rateLimitHeaders(admission: Admission): Record<string, string> {
  const headers: Record<string, string> = {};
  add(headers, 'requests', admission.requests);
  add(headers, 'tokens', admission.tokens);
  return headers;
}
