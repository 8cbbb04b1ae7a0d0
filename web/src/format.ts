// One way to show dates, times, numbers and money across the dashboard: the browser's own locale (Intl), with
// times in UTC where a day boundary matters (limits and usage reset at UTC midnight) and saying so.

const numbers = new Intl.NumberFormat(undefined);
const dateUtc = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeZone: 'UTC' });
const dateTimeUtc = new Intl.DateTimeFormat(undefined, {
  dateStyle: 'medium',
  timeStyle: 'short',
  timeZone: 'UTC',
});

/** A count, or "unlimited" for a limit that is not set. */
export const num = (n: number | null): string => (n === null ? 'unlimited' : numbers.format(n));

/** Money: two decimals, or up to six for amounts under a cent (a single request's cost). */
export const usd = (amount: number): string =>
  `USD ${new Intl.NumberFormat(undefined, {
    minimumFractionDigits: 2,
    maximumFractionDigits: amount !== 0 && Math.abs(amount) < 0.01 ? 6 : 2,
  }).format(amount)}`;

/** A moment, in UTC and saying so. */
export const dateTime = (iso: string | null): string =>
  iso ? `${dateTimeUtc.format(new Date(iso))} UTC` : '—';

/** A UTC calendar day (an expiry, a usage day). */
export const date = (iso: string | null): string => (iso ? dateUtc.format(new Date(iso)) : '—');

/** An amount in any currency, two decimals, with its code before it as the dashboard shows USD. */
export const money = (amount: number, currency: string): string =>
  `${currency.toUpperCase()} ${new Intl.NumberFormat(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(amount)}`;

/** A plan id as a name: `free_trial` → "Free Trial" (in text, so labels drawn before it cannot affect it). */
export const planName = (plan: string): string =>
  plan
    .split('_')
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join(' ');
