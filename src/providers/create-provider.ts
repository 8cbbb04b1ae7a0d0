import type { ProviderConfig, TimeoutsConfig } from '../config/config.ts';
import { createAnthropicProvider } from './anthropic/anthropic-provider.ts';
import { createGeminiProvider } from './gemini/gemini-provider.ts';
import { createOpenAIProvider } from './openai/openai-provider.ts';
import type { Provider } from './provider.ts';
import { createSimulatorProvider } from './simulator/simulator-provider.ts';

/** The adapter for a configured provider. */
export function createProvider(config: ProviderConfig, timeouts: TimeoutsConfig): Provider {
  switch (config.type) {
    case 'openai':
      return createOpenAIProvider(config, timeouts);
    case 'anthropic':
      return createAnthropicProvider(config, timeouts);
    case 'gemini':
      return createGeminiProvider(config, timeouts);
    case 'simulator':
      return createSimulatorProvider({
        id: config.id,
        chunkIntervalMs: config.chunkIntervalMs,
        firstTokenMs: config.firstTokenMs,
      });
  }
}
