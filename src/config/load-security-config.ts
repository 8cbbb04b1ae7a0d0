import { isIP } from 'node:net';
import type { SecurityConfig, TrustProxy } from './config.ts';

type Env = Record<string, string | undefined>;

/** What the rest of the configuration already decided, which the security settings depend on. */
export interface SecurityInputs {
  publicUrl: string | undefined;
  smtpUrl: string | undefined;
  stripe: boolean;
  webhookAllowPrivate: boolean;
}

/**
 * The security settings from the environment (docs/security.md). Throws `fail(message)` for a bad value, and
 * in production mode for a deployment that would hand out free money or unverifiable accounts by default.
 */
export function loadSecurityConfig(
  env: Env,
  inputs: SecurityInputs,
  fail: (message: string) => Error,
): SecurityConfig {
  const production = env['NODE_ENV'] === 'production' || env['TOLLGATE_ENV'] === 'production';
  const testPayments = flag(env, 'TOLLGATE_TEST_PAYMENTS', fail);
  const noMail = flag(env, 'TOLLGATE_ALLOW_NO_MAIL', fail);
  if (production) {
    if (!inputs.publicUrl)
      throw fail(
        'PUBLIC_URL: required in production (links handed out are never built from request headers)',
      );
    if (!inputs.stripe && testPayments !== true)
      throw fail(
        'STRIPE_SECRET_KEY: not set in production, so payments would use the test provider, which lets any user pay nothing; set Stripe, or TOLLGATE_TEST_PAYMENTS=true to run the test provider on purpose',
      );
    if (!inputs.smtpUrl && noMail !== true)
      throw fail(
        'SMTP_URL: not set in production, so nobody could verify an e-mail address; set it, or TOLLGATE_ALLOW_NO_MAIL=true on purpose',
      );
  }
  const verify = env['TOLLGATE_REQUIRE_VERIFIED_EMAIL'] ?? 'auto';
  if (!['auto', 'true', 'false'].includes(verify))
    throw fail('TOLLGATE_REQUIRE_VERIFIED_EMAIL: must be auto, true or false');
  return {
    production,
    requireVerifiedEmail: verify === 'auto' ? inputs.smtpUrl !== undefined : verify === 'true',
    keyCreationsPerMinute: count(env, 'TOLLGATE_KEY_CREATIONS_PER_MINUTE', 10, fail),
    secretKeys: secretKeys(env, fail),
    metricsToken: env['TOLLGATE_METRICS_TOKEN'] || undefined,
    metricsAddress: address(env['TOLLGATE_METRICS_ADDRESS'], fail),
    webhookPorts: ports(env['TOLLGATE_WEBHOOK_PORTS'], inputs.webhookAllowPrivate, fail),
  };
}

/**
 * TOLLGATE_TRUST_PROXY: unset or `false` (the socket address), a hop count (`1`: one load balancer in front),
 * or a comma-separated list of proxy addresses and CIDR blocks. `true` is refused: trusting every hop lets a
 * client choose its address with the leftmost X-Forwarded-For entry.
 */
export function loadTrustProxy(raw: string | undefined, fail: (message: string) => Error): TrustProxy {
  const value = raw?.trim() ?? '';
  if (value === '' || value === 'false' || value === '0') return false;
  if (value === 'true')
    throw fail(
      'TOLLGATE_TRUST_PROXY: true is no longer accepted (any client could choose its address); set the number of proxies in front (e.g. 1) or their addresses/CIDR blocks (e.g. 10.0.0.0/8)',
    );
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops > 16) throw fail('TOLLGATE_TRUST_PROXY: a hop count must be from 0 to 16');
    return hops;
  }
  const list = value.split(',').map((entry) => entry.trim());
  for (const entry of list) {
    const [network = '', bits, extra] = entry.split('/');
    const family = isIP(network);
    const max = family === 4 ? 32 : 128;
    if (
      family === 0 ||
      extra !== undefined ||
      (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= max))
    )
      throw fail(`TOLLGATE_TRUST_PROXY: ${entry} is not a hop count, an IP address or a CIDR block`);
  }
  return list;
}

function flag(env: Env, name: string, fail: (message: string) => Error): boolean | undefined {
  const value = env[name];
  if (value === undefined || value === '') return undefined;
  if (value !== 'true' && value !== 'false') throw fail(`${name}: must be true or false`);
  return value === 'true';
}

function count(env: Env, name: string, fallback: number, fail: (message: string) => Error): number {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  if (!/^\d+$/.test(value) || Number(value) < 1) throw fail(`${name}: must be a whole number of at least 1`);
  return Number(value);
}

/** TOLLGATE_SECRET_KEY (current) and TOLLGATE_SECRET_KEY_PREVIOUS (comma-separated, for rotation). */
function secretKeys(env: Env, fail: (message: string) => Error): SecurityConfig['secretKeys'] {
  const current = env['TOLLGATE_SECRET_KEY'];
  const previous = (env['TOLLGATE_SECRET_KEY_PREVIOUS'] ?? '')
    .split(',')
    .map((key) => key.trim())
    .filter(Boolean);
  if (!current) {
    if (previous.length > 0) throw fail('TOLLGATE_SECRET_KEY_PREVIOUS: set TOLLGATE_SECRET_KEY too');
    return undefined;
  }
  for (const key of [current, ...previous])
    if (key.length < 32)
      throw fail('TOLLGATE_SECRET_KEY: must be at least 32 characters (e.g. openssl rand -base64 32)');
  return { current, previous };
}

function address(
  raw: string | undefined,
  fail: (message: string) => Error,
): SecurityConfig['metricsAddress'] {
  if (!raw) return undefined;
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(raw.trim());
  const port = Number(match?.[3]);
  if (!match || port > 65_535)
    throw fail('TOLLGATE_METRICS_ADDRESS: must be host:port (e.g. 127.0.0.1:9464)');
  return { host: match[1] ?? match[2] ?? '', port };
}

/** TOLLGATE_WEBHOOK_PORTS: `any`, or a comma-separated list; 80 and 443 unless private targets are allowed. */
function ports(
  raw: string | undefined,
  allowPrivate: boolean,
  fail: (message: string) => Error,
): SecurityConfig['webhookPorts'] {
  const value = raw?.trim() ?? '';
  if (value === '') return allowPrivate ? 'any' : [80, 443];
  if (value === 'any') return 'any';
  return value.split(',').map((entry) => {
    const port = Number(entry.trim());
    if (!/^\d+$/.test(entry.trim()) || port < 1 || port > 65_535)
      throw fail(`TOLLGATE_WEBHOOK_PORTS: ${entry} is not a port`);
    return port;
  });
}
