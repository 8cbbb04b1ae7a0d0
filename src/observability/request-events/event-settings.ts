import { ConfigError } from '../../config/load-config.ts';

/** Where finished-request events go, read from TOLLGATE_REQUEST_EVENTS*; undefined when they are off. */
export interface EventSettings {
  /** `stdout` (JSON lines) or the http(s) address batches are POSTed to. */
  target: 'stdout' | URL;
  /** Extra headers for the HTTP target (`k=v,k2=v2`, e.g. an Authorization). */
  headers: Record<string, string>;
  /** The most events one write or POST carries. */
  batchSize: number;
  /** Events waiting beyond this many push the oldest out (counted). */
  maxQueue: number;
  /** How long an event waits at most for its batch to fill. */
  intervalMs: number;
  /** Attempts of one batch before it is dropped (counted). */
  maxAttempts: number;
}

type Env = Readonly<Record<string, string | undefined>>;

export function eventSettings(env: Env): EventSettings | undefined {
  const value = env['TOLLGATE_REQUEST_EVENTS']?.trim();
  if (!value || value === 'off') return undefined;
  let target: EventSettings['target'];
  if (value === 'stdout') target = 'stdout';
  else {
    const url = URL.parse(value);
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      throw new ConfigError(`TOLLGATE_REQUEST_EVENTS: "stdout" or an http(s) URL, not "${value}"`);
    target = url;
  }
  return {
    target,
    headers: headerPairs(env['TOLLGATE_REQUEST_EVENTS_HEADERS']),
    batchSize: whole(env, 'TOLLGATE_REQUEST_EVENTS_BATCH', 100),
    maxQueue: whole(env, 'TOLLGATE_REQUEST_EVENTS_QUEUE', 10_000),
    intervalMs: whole(env, 'TOLLGATE_REQUEST_EVENTS_INTERVAL_MS', 1_000),
    maxAttempts: whole(env, 'TOLLGATE_REQUEST_EVENTS_ATTEMPTS', 5),
  };
}

function headerPairs(value: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (value ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    headers[decodeURIComponent(pair.slice(0, at).trim()).toLowerCase()] = decodeURIComponent(
      pair.slice(at + 1).trim(),
    );
  }
  return headers;
}

function whole(env: Env, name: string, fallback: number): number {
  const value = env[name];
  if (value === undefined || value.trim() === '') return fallback;
  const number = Number(value);
  if (!Number.isInteger(number) || number <= 0)
    throw new ConfigError(`${name}: a positive integer, not "${value}"`);
  return number;
}
