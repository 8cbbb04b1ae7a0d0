import type { Command } from 'commander';
import type { Config } from '../../core/config.ts';
import { CliError } from '../cli-error.ts';
import { microsToUsd } from '../../core/money.ts';
import { createOutput } from '../output.ts';

/** `tollgate config check <file>`: the project's own loader validates the file with this environment. */
export function registerConfigCommands(program: Command): void {
  const config = program.command('config').description('the gateway configuration file');
  config
    .command('check')
    .description(
      'validate a configuration file as the gateway would load it (with this environment), and print the resolved models, deployments and prices, or the field that is wrong',
    )
    .argument('<file>', 'the YAML file (what TOLLGATE_CONFIG names)')
    .action(async (file: string, _options: unknown, command: Command) => {
      // Loaded on use: the loader pulls in the model catalog and the gateway's defaults.
      const { ConfigError, loadConfig } = await import('../../config/load-config.ts');
      const out = createOutput({ json: command.optsWithGlobals<{ json?: boolean }>().json === true });
      let loaded: Config;
      try {
        loaded = loadConfig(process.env, { path: file, source: 'the command line' });
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        if (out.json) out.printJson({ valid: false, error: error.message });
        // A message about the file itself (unreadable, not YAML, empty) names it already.
        throw new CliError(error.file ? error.message : `${file} is not valid: ${error.message}`);
      }
      const summary = summarizeConfig(loaded);
      if (out.json) return out.printJson({ valid: true, ...summary });
      const models = count(summary.models.length, 'model');
      out.line(`${file} is valid: ${models}, ${count(summary.providers.length, 'provider')}`);
      out.line();
      out.printTable(
        ['MODEL', 'INPUT_USD_PER_1M', 'OUTPUT_USD_PER_1M', 'CONTEXT', 'FALLBACKS'],
        summary.models.map((m) => [
          m.id,
          m.input_usd_per_million,
          m.output_usd_per_million,
          m.context_window,
          m.fallbacks.join(','),
        ]),
      );
      out.line();
      out.printTable(
        ['MODEL', 'DEPLOYMENT', 'PROVIDER', 'UPSTREAM_MODEL', 'WEIGHT'],
        summary.models.flatMap((m) =>
          m.deployments.map((d) => [m.id, d.id, d.provider, d.upstream_model, d.weight]),
        ),
      );
    });
}

/** "1 provider", "2 providers". */
const count = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** The resolved models, deployments, prices (USD per million tokens) and providers; no secrets. */
function summarizeConfig(config: Config) {
  return {
    models: [...config.models.values()].map((model) => ({
      id: model.id,
      input_usd_per_million: microsToUsd(model.inputMicrosPerMillion),
      output_usd_per_million: microsToUsd(model.outputMicrosPerMillion),
      cached_input_usd_per_million: microsToUsd(model.cachedInputMicrosPerMillion),
      cache_write_usd_per_million: microsToUsd(model.cacheWriteMicrosPerMillion),
      cache_write_1h_usd_per_million: microsToUsd(model.cacheWrite1hMicrosPerMillion),
      context_window: model.contextWindow,
      max_output_tokens: model.maxOutputTokens,
      fallbacks: model.fallbacks,
      deployments: model.deployments.map((deployment) => ({
        id: deployment.id,
        provider: deployment.provider,
        upstream_model: deployment.upstreamModel,
        weight: deployment.weight,
      })),
    })),
    providers: [...config.providers.values()].map((provider) => ({
      id: provider.id,
      type: provider.type,
      base_url: provider.baseUrl,
      api_key: provider.apiKey === undefined ? 'unset' : 'set',
    })),
  };
}
