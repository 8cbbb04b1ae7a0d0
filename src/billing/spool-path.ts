import { dirname, join } from 'node:path';

/**
 * Where settlements the database would not take at shutdown are kept for the next start: beside the SQLite
 * database file, or under ./data for PostgreSQL and an in-memory database.
 */
export function defaultSpoolPath(databaseUrl: string): string {
  const sqlite = /^postgres/.test(databaseUrl) ? undefined : databaseUrl.replace(/^sqlite:(\/\/)?/, '');
  return join(sqlite && sqlite !== ':memory:' ? dirname(sqlite) : './data', 'settlements-spool.jsonl');
}
