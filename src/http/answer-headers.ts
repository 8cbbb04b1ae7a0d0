import type { AnswerFacts } from '../gateway/stream-sink.ts';
import { formatUsd } from '../core/money.ts';
import { costBreakdownHeader } from './cost-breakdown.ts';
import { rateLimitHeaders } from './rate-limit-headers.ts';

/**
 * The headers of an answer (whole or streamed), in one new map: the key's x-ratelimit-* state, the gateway's
 * overhead (`x-tollgate-overhead-ms`) and, for a whole answer, its cost (`x-tollgate-cost-usd`) and what
 * makes it up (`x-tollgate-cost-breakdown`).
 */
export function answerHeaders(facts: AnswerFacts): Record<string, string> {
  const headers = rateLimitHeaders(facts.rateLimits);
  headers['x-tollgate-overhead-ms'] = facts.overheadMs.toFixed(3);
  if (facts.costMicros !== undefined) headers['x-tollgate-cost-usd'] = formatUsd(facts.costMicros, 6);
  if (facts.costBreakdown !== undefined)
    headers['x-tollgate-cost-breakdown'] = costBreakdownHeader(
      facts.costBreakdown.kinds,
      facts.costBreakdown.scaled,
    );
  return headers;
}
