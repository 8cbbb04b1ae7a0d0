import { z } from 'zod';
import type { LimiterFailurePolicy } from '../core/config.ts';
import { oneOf, wholeNumber } from '../shared/schema-primitives.ts';

/** An environment variable that counts as unset when empty. */
const optionalValue = z
  .string()
  .optional()
  .transform((value) => value || undefined);

/** What `limits.redis_failure` and TOLLGATE_REDIS_FAILURE may say. */
export const FAILURE_POLICIES = ['local', 'allow', 'deny'] as const satisfies readonly LimiterFailurePolicy[];

/**
 * The environment variables of the server itself (README's table); the security settings have their own
 * (load-security-config.ts). Other variables pass by untouched.
 */
export const ENV_SCHEMA = z
  .looseObject({
    PORT: wholeNumber(0, 65_535).default(8080),
    HOST: z.string().default('0.0.0.0'),
    PUBLIC_URL: optionalValue
      .transform((url) => url?.replace(/\/$/, ''))
      .refine((url) => url === undefined || /^https?:\/\/[^/]/.test(url), {
        error: 'must be an http(s) URL',
      }),
    DATABASE_URL: z.string().default('sqlite:./data/tollgate.db'),
    REDIS_URL: optionalValue,
    TOLLGATE_ADMIN_KEY: optionalValue,
    SMTP_URL: optionalValue,
    LOG_LEVEL: z.string().default('info'),
    TOLLGATE_BODY_LIMIT: wholeNumber(1024).default(4 * 1024 * 1024),
    TOLLGATE_REDIS_FAILURE: oneOf(FAILURE_POLICIES).optional(),
    TOLLGATE_WEBHOOK_ALLOW_PRIVATE: z
      .string()
      .optional()
      .transform((value) => value === 'true'),
    STRIPE_SECRET_KEY: optionalValue,
    STRIPE_WEBHOOK_SECRET: optionalValue,
    STRIPE_API_BASE: optionalValue,
  })
  .refine((env) => Boolean(env.STRIPE_SECRET_KEY) === Boolean(env.STRIPE_WEBHOOK_SECRET), {
    error: 'STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET must be set together',
  });
