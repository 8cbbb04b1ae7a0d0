import type { ProviderConfig, TimeoutsConfig } from '../core/config.ts';
import type { Provider } from './provider.ts';
import { providerPlugin } from './registry.ts';

/** The adapter for a configured provider, built by its type's plug-in (src/providers/registry.ts). */
export function createProvider(config: ProviderConfig, timeouts: TimeoutsConfig): Provider {
  const plugin = providerPlugin(config.type);
  if (!plugin) throw new Error(`no provider plug-in of type ${config.type}`);
  return plugin.create(config, timeouts);
}
