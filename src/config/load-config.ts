import { readFileSync } from 'node:fs';
import { parse as parseYaml, YAMLError } from 'yaml';
import type { z } from 'zod';
import type { Config } from '../core/config.ts';
import { ENV_SCHEMA } from './env-schema.ts';
import { createFileSchema } from './file-schema.ts';
import { loadSecurityConfig, loadTrustProxy } from './load-security-config.ts';
import { describeIssue } from '../shared/schema-primitives.ts';

/** A configuration mistake: start-up stops with this one message, which names the field. */
export class ConfigError extends Error {
  override name = 'ConfigError';
  /** The file, when the message is about the file itself (unreadable, not YAML, empty) and names it. */
  readonly file: string | undefined;
  constructor(message: string, file?: string) {
    super(message);
    this.file = file;
  }
}

type Env = Record<string, string | undefined>;
type Obj = Record<string, unknown>;

/** A configuration file to read, and where its path came from (messages name it). */
export interface ConfigFile {
  path: string;
  /** `TOLLGATE_CONFIG`, `--config`, `the command line`: what named the file. */
  source: string;
}

/**
 * Builds the frozen configuration from the environment and the YAML file `file` (else the one
 * `TOLLGATE_CONFIG` names). A file that cannot be read or parsed, or holds nothing, is a ConfigError naming
 * the file and what named it: an empty file is refused (docs/decisions.md, "An empty configuration file").
 */
export function loadConfig(env: Env = process.env, file?: ConfigFile): Config {
  const named = env['TOLLGATE_CONFIG'];
  const from = file ?? (named ? { path: named, source: 'TOLLGATE_CONFIG' } : undefined);
  return parseConfig(from ? readConfigFile(from) : {}, env);
}

/** The YAML mapping in the file: a ConfigError names the file (and the line of a syntax error). */
function readConfigFile({ path, source }: ConfigFile): Obj {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read ${path} (from ${source}): ${(error as Error).message}`, path);
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (error) {
    if (!(error instanceof YAMLError)) throw error;
    const at = error.linePos?.[0];
    // yaml's message ends with " at line L, column C:" and a snippet; the position leads ours instead.
    const reason = error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
    throw new ConfigError(`${path}${at ? `:${at.line}:${at.col}` : ''}: YAML syntax error: ${reason}`, path);
  }
  if (parsed === null || parsed === undefined)
    throw new ConfigError(
      `${path} (from ${source}) is empty: give at least one setting, or name no file to run on the built-in defaults`,
      path,
    );
  if (typeof parsed !== 'object' || Array.isArray(parsed))
    throw new ConfigError(`${path}: not a mapping`, path);
  return parsed as Obj;
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
