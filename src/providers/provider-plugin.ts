import type { z } from 'zod';
import type { ProviderConfig, TimeoutsConfig } from '../core/config.ts';
import type { Provider } from './provider.ts';

/** The environment: where the secrets a configuration names (`api_key_env`) are read. */
export type Env = Readonly<Record<string, string | undefined>>;

/** What a plug-in's schema makes of its keys of a `providers:` entry: everything but `id` and `type`. */
export type ProviderSettings<Options> = Omit<ProviderConfig<Options>, 'id' | 'type'>;

/**
 * One upstream protocol as a plug-in: its `type:` in the YAML, the keys it takes there and their validation,
 * and how its adapter is built. `src/providers/registry.ts` lists every plug-in.
 */
export interface ProviderPlugin<Type extends string = string, Options = unknown> {
  readonly type: Type;
  /** The schema of its keys besides `id` and `type` (unknown keys refused); `env` holds what `api_key_env` names. */
  settingsSchema(env: Env): z.ZodType<ProviderSettings<Options>, unknown>;
  /** The adapter for one configured provider of this type. */
  create(config: ProviderConfig<Options>, timeouts: TimeoutsConfig): Provider;
}
