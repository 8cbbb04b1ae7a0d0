import { anthropicPlugin } from './anthropic/anthropic-plugin.ts';
import { geminiPlugin } from './gemini/gemini-plugin.ts';
import { openaiPlugin } from './openai/openai-plugin.ts';
import type { ProviderPlugin } from './provider-plugin.ts';
import { simulatorPlugin } from './simulator/simulator-plugin.ts';

/** Every provider plug-in: a new upstream protocol is a folder beside these and one line here. */
export const PROVIDERS = [openaiPlugin, anthropicPlugin, geminiPlugin, simulatorPlugin] as const;

/** The `type:` of a `providers:` entry. */
export type ProviderType = (typeof PROVIDERS)[number]['type'];

export const PROVIDER_TYPES = PROVIDERS.map((plugin) => plugin.type) as [ProviderType, ...ProviderType[]];

const BY_TYPE: ReadonlyMap<string, ProviderPlugin> = new Map<string, ProviderPlugin>(
  PROVIDERS.map((plugin) => [plugin.type, plugin]),
);

/** The plug-in of a provider type, or undefined for a type no plug-in declares. */
export function providerPlugin(type: string): ProviderPlugin | undefined {
  return BY_TYPE.get(type);
}
