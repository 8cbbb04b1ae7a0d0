import { isIP } from 'node:net';
import { z } from 'zod';
import type { SecurityConfig, TrustProxy } from '../core/config.ts';
import { describeIssue } from '../shared/schema-primitives.ts';
import { weakSecretReason } from './secret-strength.ts';

type Env = Record<string, string | undefined>;

/** What the rest of the configuration already decided, which the security settings depend on. */
export interface SecurityInputs {
  publicUrl: string | undefined;
  smtpUrl: string | undefined;
  stripe: boolean;
  webhookAllowPrivate: boolean;
}

/** An environment variable that counts as unset when empty. */
const unsetWhenEmpty = <Output>(schema: z.ZodType<Output, unknown>) =>
  z.preprocess((value) => (value === '' ? undefined : value), schema.optional());

const flag = unsetWhenEmpty(
  z.enum(['true', 'false'], { error: 'must be true or false' }).transform((value) => value === 'true'),
);

const SECRET_KEY_LENGTH = 'must be at least 32 characters (e.g. openssl rand -base64 32)';

/**
 * TOLLGATE_TRUST_PROXY: unset or `false` (the socket address), a hop count (`1`: one load balancer in front),
 * or a comma-separated list of proxy addresses and CIDR blocks. `true` is refused: trusting every hop lets a
 * client choose its address with the leftmost X-Forwarded-For entry.
 */
const TRUST_PROXY = z
  .string()
  .optional()
  .transform((raw, context): TrustProxy => {
    const value = raw?.trim() ?? '';
    if (value === '' || value === 'false' || value === '0') return false;
    const problem = (message: string): never => {
      context.addIssue({ code: 'custom', message });
      return z.NEVER;
    };
    if (value === 'true')
      return problem(
        'true is no longer accepted (any client could choose its address); set the number of proxies in front (e.g. 1) or their addresses/CIDR blocks (e.g. 10.0.0.0/8)',
      );
    if (/^\d+$/.test(value))
      return Number(value) > 16 ? problem('a hop count must be from 0 to 16') : Number(value);
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
        return problem(`${entry} is not a hop count, an IP address or a CIDR block`);
    }
    return list;
  });

/** The security variables of the environment (docs/security.md), each checked on its own. */
const SECURITY_ENV = z.looseObject({
  NODE_ENV: z.string().optional(),
  TOLLGATE_ENV: z.string().optional(),
  TOLLGATE_TEST_PAYMENTS: flag,
  TOLLGATE_ALLOW_NO_MAIL: flag,
  TOLLGATE_WEBHOOK_PRIVATE_IN_PRODUCTION: flag,
  TOLLGATE_REQUIRE_VERIFIED_EMAIL: z
    .enum(['auto', 'true', 'false'], { error: 'must be auto, true or false' })
    .default('auto'),
  TOLLGATE_KEY_CREATIONS_PER_MINUTE: unsetWhenEmpty(
    z
      .string()
      .regex(/^\d+$/, { error: 'must be a whole number of at least 1' })
      .transform(Number)
      .refine((count) => count >= 1, { error: 'must be a whole number of at least 1' }),
  ),
  TOLLGATE_SECRET_KEY: unsetWhenEmpty(z.string().min(32, { error: SECRET_KEY_LENGTH })),
  TOLLGATE_SECRET_KEY_PREVIOUS: z
    .string()
    .optional()
    .transform((value) =>
      (value ?? '')
        .split(',')
        .map((key) => key.trim())
        .filter(Boolean),
    ),
  TOLLGATE_METRICS_TOKEN: unsetWhenEmpty(z.string()),
  TOLLGATE_METRICS_ADDRESS: unsetWhenEmpty(
    z.string().transform((raw, context) => {
      const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(raw.trim());
      const port = Number(match?.[3]);
      if (match && port <= 65_535) return { host: match[1] ?? match[2] ?? '', port };
      context.addIssue({ code: 'custom', message: 'must be host:port (e.g. 127.0.0.1:9464)' });
      return z.NEVER;
    }),
  ),
  /** `any`, or a comma-separated list; unset: 80 and 443, or any when private targets are allowed. */
  TOLLGATE_WEBHOOK_PORTS: z
    .string()
    .optional()
    .transform((raw, context): SecurityConfig['webhookPorts'] | undefined => {
      const value = raw?.trim() ?? '';
      if (value === '') return undefined;
      if (value === 'any') return 'any';
      const list = value.split(',').map((entry) => entry.trim());
      const bad = list.find((entry) => !/^\d+$/.test(entry) || Number(entry) < 1 || Number(entry) > 65_535);
      if (bad === undefined) return list.map(Number);
      context.addIssue({ code: 'custom', message: `${bad} is not a port` });
      return z.NEVER;
    }),
});

/**
 * The security settings from the environment (docs/security.md). Throws `fail(message)` for a bad value, and
 * in production mode for a deployment that would hand out free money or unverifiable accounts by default.
 */
export function loadSecurityConfig(
  env: Env,
  inputs: SecurityInputs,
  fail: (message: string) => Error,
): SecurityConfig {
  const parsed = SECURITY_ENV.safeParse(env);
  if (!parsed.success) throw fail(describeIssue(parsed.error.issues[0]!));
  const vars = parsed.data;
  const production = vars.NODE_ENV === 'production' || vars.TOLLGATE_ENV === 'production';
  if (production) {
    if (!inputs.publicUrl)
      throw fail(
        'PUBLIC_URL: required in production (links handed out are never built from request headers)',
      );
    if (!inputs.stripe && vars.TOLLGATE_TEST_PAYMENTS !== true)
      throw fail(
        'STRIPE_SECRET_KEY: not set in production, so payments would use the test provider, which lets any user pay nothing; set Stripe, or TOLLGATE_TEST_PAYMENTS=true to run the test provider on purpose',
      );
    if (!inputs.smtpUrl && vars.TOLLGATE_ALLOW_NO_MAIL !== true)
      throw fail(
        'SMTP_URL: not set in production, so nobody could verify an e-mail address; set it, or TOLLGATE_ALLOW_NO_MAIL=true on purpose',
      );
    if (inputs.webhookAllowPrivate && vars.TOLLGATE_WEBHOOK_PRIVATE_IN_PRODUCTION !== true)
      throw fail(
        'TOLLGATE_WEBHOOK_ALLOW_PRIVATE: true in production, so any account could make Tollgate POST to loopback, private and cloud-metadata addresses; unset it, or also set TOLLGATE_WEBHOOK_PRIVATE_IN_PRODUCTION=true on purpose',
      );
  }
  const adminKey = env['TOLLGATE_ADMIN_KEY'];
  const weakAdminKey = production && adminKey ? weakSecretReason(adminKey) : undefined;
  if (weakAdminKey)
    throw fail(
      `TOLLGATE_ADMIN_KEY: too weak for production (${weakAdminKey}); generate one with openssl rand -base64 32, or leave it unset and a strong one is created and printed once`,
    );
  const verify = vars.TOLLGATE_REQUIRE_VERIFIED_EMAIL;
  const previous = vars.TOLLGATE_SECRET_KEY_PREVIOUS;
  if (!vars.TOLLGATE_SECRET_KEY && previous.length > 0)
    throw fail('TOLLGATE_SECRET_KEY_PREVIOUS: set TOLLGATE_SECRET_KEY too');
  if (previous.some((key) => key.length < 32)) throw fail(`TOLLGATE_SECRET_KEY: ${SECRET_KEY_LENGTH}`);
  return {
    production,
    requireVerifiedEmail: verify === 'auto' ? inputs.smtpUrl !== undefined : verify === 'true',
    keyCreationsPerMinute: vars.TOLLGATE_KEY_CREATIONS_PER_MINUTE ?? 10,
    secretKeys: vars.TOLLGATE_SECRET_KEY ? { current: vars.TOLLGATE_SECRET_KEY, previous } : undefined,
    metricsToken: vars.TOLLGATE_METRICS_TOKEN,
    metricsAddress: vars.TOLLGATE_METRICS_ADDRESS,
    webhookPorts: vars.TOLLGATE_WEBHOOK_PORTS ?? (inputs.webhookAllowPrivate ? 'any' : [80, 443]),
  };
}

/** TOLLGATE_TRUST_PROXY, parsed (see TRUST_PROXY above); `fail(message)` for a value that is refused. */
export function loadTrustProxy(raw: string | undefined, fail: (message: string) => Error): TrustProxy {
  const parsed = TRUST_PROXY.safeParse(raw);
  if (!parsed.success)
    throw fail(describeIssue({ ...parsed.error.issues[0]!, path: ['TOLLGATE_TRUST_PROXY'] }));
  return parsed.data;
}
