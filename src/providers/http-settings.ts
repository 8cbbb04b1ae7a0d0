import { z } from 'zod';
import { mapping, optionalRecord, text } from '../shared/schema-primitives.ts';
import type { Env, ProviderSettings } from './provider-plugin.ts';

/** HTTP upstreams take no options beyond where they are, their key and extra headers. */
export type HttpOptions = Record<string, never>;

/**
 * The keys of an HTTP upstream's `providers:` entry: `base_url` (http or https), `api_key_env` (the name of
 * the environment variable holding its key, which must be set) and `headers` (sent with every request).
 */
export function httpSettingsSchema(env: Env): z.ZodType<ProviderSettings<HttpOptions>, unknown> {
  return mapping({
    base_url: text().regex(/^https?:\/\//, { error: 'must be an http(s) URL' }),
    api_key_env: text().optional(),
    headers: optionalRecord(text()),
  }).transform((raw, context) => {
    const name = raw.api_key_env;
    const apiKey = name === undefined ? undefined : env[name];
    if (name !== undefined && !apiKey) {
      context.addIssue({
        code: 'custom',
        path: ['api_key_env'],
        message: `environment variable ${name} is not set`,
      });
      return z.NEVER;
    }
    return { baseUrl: raw.base_url.replace(/\/$/, ''), apiKey, headers: raw.headers, options: {} };
  });
}
