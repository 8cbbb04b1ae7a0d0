import type { Settlement } from '../core/records.ts';

/** A settlement for tests of the billing path: one prompt and one completion token at the given cost. */
export const settlementOf = (
  requestId: string,
  accountId: string,
  costMicros: number,
  now: number,
): Settlement => ({
  requestId,
  accountId,
  keyId: 'k',
  model: 'model-b',
  deployment: null,
  promptTokens: 1,
  completionTokens: 1,
  estimated: false,
  costMicros,
  status: 'ok',
  latencyMs: 1,
  ttftMs: null,
  createdAt: now,
});
