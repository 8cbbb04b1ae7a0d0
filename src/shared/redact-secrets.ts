type Rule = readonly [RegExp, (match: string, ...groups: string[]) => string];

const REDACTED = '[redacted]';

/**
 * What secrets look like in text that came from elsewhere (an upstream's error body that echoes our request,
 * a driver's error message): credential headers, bearer tokens, API keys of the common providers and ours,
 * credentials in URLs, long opaque tokens.
 */
const RULES: readonly Rule[] = [
  // A header echoed back: its name stays, everything after it to the end of the value goes.
  [
    /\b(authorization|proxy-authorization|x-api-key|api-key|x-goog-api-key|cookie|set-cookie)(["']?\s*[:=]\s*["']?)[^"'\r\n,}]+/gi,
    (_match, name, separator) => `${name}${separator}${REDACTED}`,
  ],
  [/\b(?:bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, () => REDACTED],
  [/\b(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}/g, () => REDACTED],
  [/\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{8,}/g, () => REDACTED],
  [/\bwhsec_[A-Za-z0-9_+/=-]{8,}/g, () => REDACTED],
  [/\btg-(?:admin-)?[A-Za-z0-9_-]{16,}/g, () => REDACTED],
  [/\bAIza[A-Za-z0-9_-]{20,}/g, () => REDACTED],
  [/\/\/[^/\s:@]+:[^/\s@]+@/g, () => `//${REDACTED}@`],
  [/\b[A-Za-z0-9_-]{40,}/g, () => REDACTED],
];

/** `text` with every secret-looking part replaced by `[redacted]` (header names and URL hosts stay). */
export function redactSecrets(text: string): string {
  let out = text;
  for (const [pattern, replace] of RULES) out = out.replace(pattern, replace);
  return out;
}

/** A copy of a serialized value (an error as pino serializes it) with every string run through redactSecrets. */
export function redactDeep(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactSecrets(value);
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item: unknown) => redactDeep(item, depth + 1));
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) copy[key] = redactDeep(item, depth + 1);
  return copy;
}
