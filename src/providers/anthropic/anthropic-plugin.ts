import { type HttpOptions, httpSettingsSchema } from '../http-settings.ts';
import type { ProviderPlugin } from '../provider-plugin.ts';
import { createAnthropicProvider } from './anthropic-provider.ts';

/** `type: anthropic`: Anthropic's Messages API. */
export const anthropicPlugin: ProviderPlugin<'anthropic', HttpOptions> = {
  type: 'anthropic',
  settingsSchema: httpSettingsSchema,
  create: createAnthropicProvider,
};
