import { type HttpOptions, httpSettingsSchema } from '../http-settings.ts';
import type { ProviderPlugin } from '../provider-plugin.ts';
import { createGeminiProvider } from './gemini-provider.ts';

/** `type: gemini`: Google's Gemini API (`base_url` is its root with the version, e.g. `…/v1beta`). */
export const geminiPlugin: ProviderPlugin<'gemini', HttpOptions> = {
  type: 'gemini',
  settingsSchema: httpSettingsSchema,
  create: createGeminiProvider,
};
