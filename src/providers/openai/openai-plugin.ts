import { type HttpOptions, httpSettingsSchema } from '../http-settings.ts';
import type { ProviderPlugin } from '../provider-plugin.ts';
import { createOpenAIProvider } from './openai-provider.ts';

/** `type: openai`: any OpenAI-compatible chat completions API. */
export const openaiPlugin: ProviderPlugin<'openai', HttpOptions> = {
  type: 'openai',
  settingsSchema: httpSettingsSchema,
  create: createOpenAIProvider,
};
