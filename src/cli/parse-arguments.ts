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

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2})$/;

/** A date (YYYY-MM-DD) or an ISO-8601 date-time with its offset, as typed (the gateway reads both). */
export function parseDateOrInstant(text: string): string {
  if ((!DATE.test(text) && !DATE_TIME.test(text)) || Number.isNaN(Date.parse(text)))
    throw new InvalidArgumentError('must be a date (2026-12-31) or an ISO date-time (2026-12-31T12:00:00Z)');
  return text;
}

/** A date (midnight UTC) or an ISO-8601 date-time; returns the instant as an ISO date-time string. */
export function parseInstant(text: string): string {
  return new Date(Date.parse(parseDateOrInstant(text))).toISOString();
}

/** Whether the text is a bare date (YYYY-MM-DD) rather than a date-time. */
export const isBareDate = (text: string): boolean => DATE.test(text);

/** A comma-separated list; empty items are dropped. */
export function parseList(text: string): string[] {
  return text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}
