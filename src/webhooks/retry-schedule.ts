/** Delays between delivery attempts: about a day in all (85,960 s), then the event is marked failed. */
export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [
  10, 30, 120, 600, 1_800, 3_600, 7_200, 14_400, 21_600, 36_000,
].map((s) => s * 1000);

/** When the attempt after `attempt` (1-based) is due, with ±20% jitter; undefined when retries are exhausted. */
export function nextAttemptAt(
  attempt: number,
  now: number,
  delaysMs: readonly number[],
  random: () => number = Math.random,
): number | undefined {
  const delay = delaysMs[attempt - 1];
  if (delay === undefined) return undefined;
  return now + Math.round(delay * (0.8 + random() * 0.4));
}
