import { InvalidArgumentError } from 'commander';

/** A non-negative integer argument (a count, a page size). */
export function parseCount(text: string): number {
  if (!/^\d{1,9}$/.test(text)) throw new InvalidArgumentError('must be a whole number');
  return Number(text);
}

/** A positive USD amount with at most six decimals (µUSD precision). */
export function parseAmountUsd(text: string): number {
  if (!/^\d{1,7}(?:\.\d{1,6})?$/.test(text) || Number(text) <= 0)
    throw new InvalidArgumentError('must be a positive amount of USD, e.g. 25 or 2.50');
  return Number(text);
}

/** A date (YYYY-MM-DD, midnight UTC) or an ISO-8601 date-time; returns the instant as an ISO string. */
export function parseInstant(text: string): string {
  const pattern = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;
  const ms = Date.parse(text);
  if (!pattern.test(text) || Number.isNaN(ms))
    throw new InvalidArgumentError('must be a date (2026-12-31) or an ISO date-time (2026-12-31T12:00:00Z)');
  return new Date(ms).toISOString();
}

/** A comma-separated list; empty items are dropped. */
export function parseList(text: string): string[] {
  return text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}
