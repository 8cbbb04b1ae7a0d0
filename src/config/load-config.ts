import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import type { Config } from './config.ts';
import { ENV_SCHEMA } from './env-schema.ts';
import { createFileSchema } from './file-schema.ts';
import { loadSecurityConfig, loadTrustProxy } from './load-security-config.ts';
import { describeIssue } from './schema-primitives.ts';

/** A configuration mistake: start-up stops with this one message, which names the field. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;
type Obj = Record<string, unknown>;

/** Builds the frozen configuration from the environment and the YAML file `TOLLGATE_CONFIG` names. */
export function loadConfig(env: Env = process.env): Config {
  const file = env['TOLLGATE_CONFIG'];
  let yaml: Obj = {};
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new ConfigError(`TOLLGATE_CONFIG: cannot read ${file}: ${(error as Error).message}`);
    }
    const parsed: unknown = parseYaml(text);
    if (parsed !== null && parsed !== undefined && (typeof parsed !== 'object' || Array.isArray(parsed)))
      throw new ConfigError(`${file}: not a mapping`);
    yaml = (parsed as Obj | null) ?? {};
  }
  return parseConfig(yaml, env);
}

/**
 * Validates a parsed YAML document (file-schema.ts) and the environment (env-schema.ts, and the security
 * settings); throws ConfigError naming the first bad field.
 */
export function parseConfig(yaml: Obj, env: Env): Config {
  const file = valid(createFileSchema(env), yaml);
  const vars = valid(ENV_SCHEMA, env);
  const stripe = vars.STRIPE_SECRET_KEY && vars.STRIPE_WEBHOOK_SECRET;
  const toError = (message: string): ConfigError => new ConfigError(message);
  const security = loadSecurityConfig(
    env,
    {
      publicUrl: vars.PUBLIC_URL,
      smtpUrl: vars.SMTP_URL,
      stripe: Boolean(stripe),
      webhookAllowPrivate: vars.TOLLGATE_WEBHOOK_ALLOW_PRIVATE,
    },
    toError,
  );
  const { redisFailure, ...fromFile } = file;
  return Object.freeze({
    ...fromFile,
    port: vars.PORT,
    host: vars.HOST,
    publicUrl: vars.PUBLIC_URL,
    databaseUrl: vars.DATABASE_URL,
    redisUrl: vars.REDIS_URL,
    adminKey: vars.TOLLGATE_ADMIN_KEY,
    smtpUrl: vars.SMTP_URL,
    logLevel: vars.LOG_LEVEL,
    bodyLimitBytes: vars.TOLLGATE_BODY_LIMIT,
    webhookAllowPrivate: vars.TOLLGATE_WEBHOOK_ALLOW_PRIVATE,
    trustProxy: loadTrustProxy(env['TOLLGATE_TRUST_PROXY'], toError),
    security,
    limiterFailurePolicy: redisFailure ?? vars.TOLLGATE_REDIS_FAILURE ?? 'local',
    stripe: stripe
      ? { secretKey: stripe, webhookSecret: vars.STRIPE_WEBHOOK_SECRET!, apiBase: vars.STRIPE_API_BASE }
      : undefined,
  });
}

/** The schema's output, or ConfigError with the first problem it found. */
function valid<Output>(schema: z.ZodType<Output, unknown>, value: unknown): Output {
  const result = schema.safeParse(value);
  if (!result.success) throw new ConfigError(describeIssue(result.error.issues[0]!));
  return result.data;
}
