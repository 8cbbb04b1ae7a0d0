/** A JSON object (not null, not an array). */
export type JsonObject = Record<string, unknown>;

/** Whether `value` is a JSON object: not null and not an array. */
export const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
