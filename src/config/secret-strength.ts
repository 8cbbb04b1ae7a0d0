/** The shortest admin key production accepts. */
export const MIN_SECRET_LENGTH = 32;
/** The least estimated entropy (bits) production accepts: a random 16-byte hex string has about 118. */
const MIN_ESTIMATED_BITS = 100;
/** A run this long seen twice is a pattern, not chance (about 1 in 10^7 for 64 random hex digits). */
const REPEATED_RUN = 8;

/**
 * Why a secret is too weak to guard the operator's API, or undefined when it will do: too short, repeating
 * a run of characters, or too few distinct characters for its length (estimated from the string's own
 * character frequencies, so `aaaa…` or `abab…` count for almost nothing however long).
 */
export function weakSecretReason(secret: string): string | undefined {
  if (secret.length < MIN_SECRET_LENGTH)
    return `it is ${secret.length} characters; at least ${MIN_SECRET_LENGTH} are needed`;
  if (repeatsRun(secret, REPEATED_RUN)) return `it repeats a run of ${REPEATED_RUN} characters`;
  const bits = estimatedBits(secret);
  if (bits < MIN_ESTIMATED_BITS)
    return `it has about ${Math.round(bits)} bits of entropy; at least ${MIN_ESTIMATED_BITS} are needed`;
  return undefined;
}

/** Length times the Shannon entropy of the string's character distribution. */
function estimatedBits(secret: string): number {
  const counts = new Map<string, number>();
  for (const char of secret) counts.set(char, (counts.get(char) ?? 0) + 1);
  const length = [...secret].length;
  let perChar = 0;
  for (const count of counts.values()) {
    const p = count / length;
    perChar -= p * Math.log2(p);
  }
  return perChar * length;
}

/** Whether some run of `run` characters occurs twice (`changeme-changeme`, `0123…f0123…f`, `aaaa…`). */
function repeatsRun(secret: string, run: number): boolean {
  const seen = new Set<string>();
  for (let at = 0; at + run <= secret.length; at++) {
    const piece = secret.slice(at, at + run);
    if (seen.has(piece)) return true;
    seen.add(piece);
  }
  return false;
}
