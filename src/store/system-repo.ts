import type { Db } from './db.ts';

/** Instance-wide settings and the leases that make a background job run on one instance at a time. */
export class SystemRepo {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  async setting(name: string): Promise<string | undefined> {
    const row = await this.#db.get<{ value: string }>('SELECT value FROM settings WHERE name = $1', [name]);
    return row?.value;
  }

  /** Stores a setting unless one exists; resolves to whichever value is now stored. */
  async settingOnce(name: string, value: string): Promise<string> {
    await this.#db.run('INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [
      name,
      value,
    ]);
    return (await this.setting(name)) ?? value;
  }

  /** Takes or renews the named lease for `owner` until `until`; false while another owner holds it. */
  async acquireLease(name: string, owner: string, now: number, until: number): Promise<boolean> {
    await this.#db.run(
      'INSERT INTO leases (name, owner, until_at) VALUES ($1, $2, 0) ON CONFLICT (name) DO NOTHING',
      [name, owner],
    );
    const changed = await this.#db.run(
      'UPDATE leases SET owner = $2, until_at = $4 WHERE name = $1 AND (owner = $2 OR until_at <= $3)',
      [name, owner, now, until],
    );
    return changed === 1;
  }

  /** Gives back every lease `owner` holds: whoever asks next takes it at once. */
  async releaseLeases(owner: string): Promise<number> {
    return this.#db.run('UPDATE leases SET until_at = 0 WHERE owner = $1', [owner]);
  }
}
