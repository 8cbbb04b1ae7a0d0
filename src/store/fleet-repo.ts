import type { Db } from './db.ts';

/** An instance's lease as the version contract reads it; `release` is null for a release before the contract. */
export interface FleetLease {
  instanceId: string;
  heartbeatAt: number;
  expiresAt: number;
  release: string | null;
  schema: string | null;
  oldestPeer: string | null;
  /** The stored formats (and rules) it reads and enforces, by name. */
  reads: string[];
}

interface LeaseRow {
  instance_id: string;
  heartbeat_at: number;
  expires_at: number;
  release_version: string | null;
  schema_version: string | null;
  oldest_peer: string | null;
  reads: string | null;
}

const toLease = (row: LeaseRow): FleetLease => ({
  instanceId: row.instance_id,
  heartbeatAt: Number(row.heartbeat_at),
  expiresAt: Number(row.expires_at),
  release: row.release_version,
  schema: row.schema_version,
  oldestPeer: row.oldest_peer,
  reads: row.reads ? (JSON.parse(row.reads) as string[]) : [],
});

/** The setting that names the oldest release allowed on the schema (raised by each release that migrates). */
const OLDEST_RELEASE_SETTING = 'fleet.oldest_release';

/** The leases of the version contract, and the schema's oldest allowed release. */
export class FleetRepo {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  /** Takes or renews this instance's lease with its versions (the same row holds on a shared database use). */
  async renew(lease: FleetLease): Promise<void> {
    await this.#db.run(
      `INSERT INTO instance_leases (instance_id, heartbeat_at, expires_at, release_version, schema_version, oldest_peer, reads)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (instance_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at,
         release_version = excluded.release_version, schema_version = excluded.schema_version,
         oldest_peer = excluded.oldest_peer, reads = excluded.reads`,
      [
        lease.instanceId,
        lease.heartbeatAt,
        lease.expiresAt,
        lease.release,
        lease.schema,
        lease.oldestPeer,
        JSON.stringify(lease.reads),
      ],
    );
  }

  /** Every lease that has not run out at `now`. */
  async live(now: number): Promise<FleetLease[]> {
    const rows = await this.#db.all<LeaseRow>(
      `SELECT instance_id, heartbeat_at, expires_at, release_version, schema_version, oldest_peer, reads
       FROM instance_leases WHERE expires_at > $1 ORDER BY instance_id`,
      [now],
    );
    return rows.map(toLease);
  }

  async end(instanceId: string): Promise<void> {
    await this.#db.run('DELETE FROM instance_leases WHERE instance_id = $1', [instanceId]);
  }

  async oldestRelease(): Promise<string | undefined> {
    const row = await this.#db.get<{ value: string }>('SELECT value FROM settings WHERE name = $1', [
      OLDEST_RELEASE_SETTING,
    ]);
    return row?.value;
  }

  /** Records the oldest release allowed on the schema; never lowers it (`newer` compares two versions). */
  async raiseOldestRelease(version: string, newer: (a: string, b: string) => boolean): Promise<void> {
    const current = await this.oldestRelease();
    if (current !== undefined && !newer(version, current)) return;
    await this.#db.run(
      'INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value',
      [OLDEST_RELEASE_SETTING, version],
    );
  }

  /** Notes that an instance of a contract release was alive at `now` (at most once a minute per instance). */
  async markSeen(now: number): Promise<void> {
    await this.#db.run(
      `INSERT INTO settings (name, value) VALUES ('fleet.last_seen_at', $1)
       ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
      [String(now)],
    );
  }

  /** When an instance of a contract release was last seen alive, if ever. */
  async lastSeen(): Promise<number | undefined> {
    const row = await this.#db.get<{ value: string }>(
      "SELECT value FROM settings WHERE name = 'fleet.last_seen_at'",
    );
    return row ? Number(row.value) : undefined;
  }

  /** The newest account registration or usage record, whoever wrote it (ms), or undefined on an empty database. */
  async lastActivity(): Promise<number | undefined> {
    const row = await this.#db.get<{ accounts: number | null; usage: number | null }>(
      `SELECT (SELECT MAX(created_at) FROM accounts) AS accounts, (SELECT MAX(created_at) FROM usage_records) AS usage`,
    );
    const newest = Math.max(Number(row?.accounts ?? 0), Number(row?.usage ?? 0));
    return newest > 0 ? newest : undefined;
  }

  /** Whether the database holds any account (an empty one has no earlier writer to warn about). */
  async hasAccounts(): Promise<boolean> {
    return (await this.#db.get('SELECT id FROM accounts LIMIT 1')) !== undefined;
  }

  /** Accounts whose ledger another writer moved after `since` (database time, ms): PostgreSQL only. */
  async ledgerMovedSince(since: number): Promise<{ accountId: string; version: number; at: number }[]> {
    const rows = await this.#db.all<{ account_id: string; version: number | string; at: number | string }>(
      'SELECT account_id, version, at FROM ledger_moves WHERE at > $1 ORDER BY at',
      [since],
    );
    return rows.map((row) => ({
      accountId: row.account_id,
      version: Number(row.version),
      at: Number(row.at),
    }));
  }

  /** Forgets moves older than `before` (every instance has read them long since). */
  async pruneLedgerMoves(before: number): Promise<void> {
    await this.#db.run('DELETE FROM ledger_moves WHERE at < $1', [before]);
  }

  /** The database's clock, in ms (ledger moves are stamped with it). */
  async databaseNow(): Promise<number> {
    const row = await this.#db.get<{ now: number | string }>(
      'SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT) AS now',
    );
    return Number(row?.now ?? 0);
  }
}
