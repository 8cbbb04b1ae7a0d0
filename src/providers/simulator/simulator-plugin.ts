import type { z } from 'zod';
import { mapping, wholeNumber } from '../../shared/schema-primitives.ts';
import type { ProviderPlugin, ProviderSettings } from '../provider-plugin.ts';
import { createSimulatorProvider } from './simulator-provider.ts';

/** The simulator's own options: the pause before the first streamed chunk, and between chunks. */
export interface SimulatorOptions {
  chunkIntervalMs: number;
  firstTokenMs: number;
}

/**
 * `chunk_interval_ms` (default 20) and `first_token_ms` (default 0): the keys of a `type: simulator` entry,
 * and of the top-level `simulator:` block that paces the built-in one.
 */
export const SIMULATOR_SETTINGS: z.ZodType<ProviderSettings<SimulatorOptions>, unknown> = mapping({
  chunk_interval_ms: wholeNumber().default(20),
  first_token_ms: wholeNumber().default(0),
}).transform((raw) => ({
  baseUrl: 'simulator://local',
  apiKey: undefined,
  headers: {},
  options: { chunkIntervalMs: raw.chunk_interval_ms, firstTokenMs: raw.first_token_ms },
}));

/** `type: simulator`: the built-in deterministic local model (no upstream, no key). */
export const simulatorPlugin: ProviderPlugin<'simulator', SimulatorOptions> = {
  type: 'simulator',
  settingsSchema: () => SIMULATOR_SETTINGS,
  create: (config) => createSimulatorProvider({ id: config.id, ...config.options }),
};
