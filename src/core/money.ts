/**
 * Money is integer micro-USD (µUSD) everywhere past the edge: 1 USD = 1,000,000 µUSD. These convert at the
 * edge (a JSON number of USD in, a display number or text out) and never feed a float back into the ledger.
 */

export const MICROS_PER_USD = 1_000_000;
const MICROS_PER_CENT = 10_000;

/** A USD amount (a JSON number) as integer µUSD, rounded to the nearest. */
export const usdToMicros = (usd: number): number => Math.round(usd * MICROS_PER_USD);

/** Integer µUSD as a USD number for JSON (display only; the ledger never holds floats). */
export const microsToUsd = (micros: number): number => Math.round(micros) / MICROS_PER_USD;

/** µUSD as USD text with a fixed number of decimals (`formatUsd(1_234_567, 2)` is `1.23`). */
export const formatUsd = (micros: number, decimals: number): string =>
  (micros / MICROS_PER_USD).toFixed(decimals);

/** µUSD as whole cents (a card processor's unit), rounded to the nearest. */
export const microsToCents = (micros: number): number => Math.round(micros / MICROS_PER_CENT);

/** Whole cents as µUSD. */
export const centsToMicros = (cents: number): number => cents * MICROS_PER_CENT;
