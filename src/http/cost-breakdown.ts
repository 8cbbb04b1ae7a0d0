import type { CostBreakdown } from '../billing/pricing.ts';
import type { TokenKinds } from '../billing/token-kinds.ts';

/** A cost in µUSD × 1,000,000 (pico-USD, an exact integer) as USD text, with no trailing zeros. */
export function picoUsd(scaled: number): string {
  const whole = Math.floor(scaled / 1e12);
  const fraction = String(scaled - whole * 1e12)
    .padStart(12, '0')
    .replace(/0+$/, '');
  return fraction === '' ? String(whole) : `${whole}.${fraction}`;
}

/**
 * The `x-tollgate-cost-breakdown` header: each kind of token as `kind=tokens:usd`, comma-separated, its cost
 * exact (the charge, `x-tollgate-cost-usd`, is their sum rounded up once to the µUSD). Reasoning is part of the
 * output and its cost, so it is given as a count only. Kinds the request had none of are left out, input and
 * output excepted.
 */
export function costBreakdownHeader(kinds: TokenKinds, scaled: CostBreakdown): string {
  const parts = [`input=${kinds.input}:${picoUsd(scaled.input)}`];
  if (kinds.cachedInput > 0) parts.push(`cached_input=${kinds.cachedInput}:${picoUsd(scaled.cachedInput)}`);
  if (kinds.cacheWrite5m > 0) parts.push(`cache_write=${kinds.cacheWrite5m}:${picoUsd(scaled.cacheWrite5m)}`);
  if (kinds.cacheWrite1h > 0)
    parts.push(`cache_write_1h=${kinds.cacheWrite1h}:${picoUsd(scaled.cacheWrite1h)}`);
  parts.push(`output=${kinds.output}:${picoUsd(scaled.output)}`);
  if (kinds.reasoning > 0) parts.push(`reasoning=${kinds.reasoning}`);
  return parts.join(', ');
}
