import { CliError } from './cli-error.ts';

/** DATABASE_URL as the gateway reads it; a configuration error becomes the CLI's own error. */
export async function configuredDatabaseUrl(): Promise<string> {
  // Loaded on use: only the commands that open the store need the configuration.
  const { ConfigError, loadConfig } = await import('../config/load-config.ts');
  try {
    return loadConfig().databaseUrl;
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(`configuration error: ${error.message}`);
    throw error;
  }
}
