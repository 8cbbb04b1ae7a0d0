import type { Db } from './db.ts';

export type ModelState = 'operational' | 'degraded' | 'down';

/** A model's samples on one UTC day: how many were taken and how many found it available (not down). */
export interface DayAvailability {
  model: string;
  /** Days since the epoch (UTC). */
  epochDay: number;
  samples: number;
  available: number;
}

const DAY_MS = 86_400_000;

/** Each public model's state once a minute, for the status page's 90-day availability. */
export class HealthSamplesRepo {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  /** Records the states at one minute; a second record for the same model and minute is ignored. */
  async record(at: number, states: ReadonlyMap<string, ModelState>): Promise<void> {
    for (const [model, state] of states)
      await this.#db.run(
        'INSERT INTO health_samples (model, at, state) VALUES ($1, $2, $3) ON CONFLICT (model, at) DO NOTHING',
        [model, at, state],
      );
  }

  /** Per model and UTC day since `from`: samples taken and available. */
  async availabilitySince(from: number): Promise<DayAvailability[]> {
    const rows = await this.#db.all<{
      model: string;
      day: number | string;
      samples: number | string;
      available: number | string;
    }>(
      `SELECT model, at / ${DAY_MS} AS day, COUNT(*) AS samples,
         SUM(CASE WHEN state = 'down' THEN 0 ELSE 1 END) AS available
       FROM health_samples WHERE at >= $1 GROUP BY model, at / ${DAY_MS}`,
      [from],
    );
    return rows.map((row) => ({
      model: row.model,
      epochDay: Math.floor(Number(row.day)),
      samples: Number(row.samples),
      available: Number(row.available),
    }));
  }

  /** Deletes samples older than `cutoff`; resolves to how many. */
  async deleteBefore(cutoff: number): Promise<number> {
    return this.#db.run('DELETE FROM health_samples WHERE at < $1', [cutoff]);
  }
}
