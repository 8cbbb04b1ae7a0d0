/** Time as integer milliseconds since the epoch, and the UTC calendar day. */

export const MINUTE_MS = 60_000;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;

/** The last day formatted: settlement formats the same day for every record of a batch. */
let lastDay = { number: NaN, text: '' };

/** UTC calendar day of a time in ms, as `YYYY-MM-DD`. */
export function utcDay(ms: number): string {
  const day = Math.floor(ms / DAY_MS);
  if (day !== lastDay.number)
    lastDay = { number: day, text: new Date(day * DAY_MS).toISOString().slice(0, 10) };
  return lastDay.text;
}
