import type { Db } from './db.ts';

export type Severity = 'info' | 'minor' | 'major' | 'critical';

/** A notice on the status page; a breaking change carries the date it takes effect. */
export interface Announcement {
  id: string;
  title: string;
  body: string;
  severity: Severity;
  models: string[];
  startsAt: number;
  endsAt: number | null;
  breaking: boolean;
  effectiveAt: number | null;
  createdAt: number;
  updatedAt: number;
  createdBy: string;
}

interface AnnouncementRow {
  id: string;
  title: string;
  body: string;
  severity: Severity;
  models: string;
  starts_at: number | string;
  ends_at: number | string | null;
  breaking: number;
  effective_at: number | string | null;
  created_at: number | string;
  updated_at: number | string;
  created_by: string;
}

const nullableNumber = (value: number | string | null): number | null =>
  value === null ? null : Number(value);

const toAnnouncement = (row: AnnouncementRow): Announcement => ({
  id: row.id,
  title: row.title,
  body: row.body,
  severity: row.severity,
  models: JSON.parse(row.models) as string[],
  startsAt: Number(row.starts_at),
  endsAt: nullableNumber(row.ends_at),
  breaking: Number(row.breaking) === 1,
  effectiveAt: nullableNumber(row.effective_at),
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
  createdBy: row.created_by,
});

const params = (a: Announcement): (string | number | null)[] => [
  a.id,
  a.title,
  a.body,
  a.severity,
  JSON.stringify(a.models),
  a.startsAt,
  a.endsAt,
  a.breaking ? 1 : 0,
  a.effectiveAt,
  a.createdAt,
  a.updatedAt,
  a.createdBy,
];

/** Announcements: posted, edited and ended by operators, read by the status page. */
export class AnnouncementsRepo {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  async insert(announcement: Announcement): Promise<void> {
    await this.#db.run(
      `INSERT INTO announcements (id, title, body, severity, models, starts_at, ends_at, breaking, effective_at,
         created_at, updated_at, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
      params(announcement),
    );
  }

  /** Replaces every editable field of the announcement with the given record's. */
  async update(announcement: Announcement): Promise<void> {
    await this.#db.run(
      `UPDATE announcements SET title = $2, body = $3, severity = $4, models = $5, starts_at = $6, ends_at = $7,
         breaking = $8, effective_at = $9, updated_at = $10 WHERE id = $1`,
      [...params(announcement).slice(0, 9), announcement.updatedAt],
    );
  }

  async byId(id: string): Promise<Announcement | undefined> {
    const row = await this.#db.get<AnnouncementRow>('SELECT * FROM announcements WHERE id = $1', [id]);
    return row && toAnnouncement(row);
  }

  /** The newest `limit` announcements, newest first. */
  async recent(limit: number): Promise<Announcement[]> {
    const rows = await this.#db.all<AnnouncementRow>(
      'SELECT * FROM announcements ORDER BY created_at DESC, id DESC LIMIT $1',
      [limit],
    );
    return rows.map(toAnnouncement);
  }
}
