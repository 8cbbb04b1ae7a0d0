import type { Db } from './db.ts';
import type { KeyBudget } from '../core/records.ts';

export interface KeyRoomRow {
  spent: number | string | null;
  held: number | string | null;
}

/**
 * A key's charged spend since a day (from the daily rollup the settlement writes) and its hold rows, in one
 * statement, so one snapshot sees a settlement's released hold and its charge together or neither;
 * parameters: key id, first day (`YYYY-MM-DD`).
 */
export const KEY_ROOM_QUERY = `SELECT (SELECT CAST(SUM(cost_micros) AS BIGINT) FROM usage_daily WHERE key_id = $1 AND day >= $2) AS spent,
       (SELECT CAST(SUM(amount_micros) AS BIGINT) FROM holds WHERE key_id = $1) AS held`;

/** The spend and held amounts of a KEY_ROOM_QUERY row, in µUSD. */
export function toKeyRoom(row: KeyRoomRow | undefined): { spentMicros: number; heldMicros: number } {
  return { spentMicros: Number(row?.spent ?? 0), heldMicros: Number(row?.held ?? 0) };
}

/**
 * Whether the key's limit still has room for `amountMicros` (limit − spend this period − holds). Call inside
 * the hold's transaction, after the account row is locked: every hold of the key takes that lock first.
 */
export async function keyHasRoom(tx: Db, key: KeyBudget, amountMicros: number): Promise<boolean> {
  if (key.limitMicros === null) return true;
  const { spentMicros, heldMicros } = toKeyRoom(
    await tx.get<KeyRoomRow>(KEY_ROOM_QUERY, [key.keyId, key.fromDay]),
  );
  return key.limitMicros - spentMicros - heldMicros >= amountMicros;
}

export interface KeyUsageRow {
  today: number | string | null;
  week: number | string | null;
  month: number | string | null;
  period: number | string | null;
}

/**
 * A key's charged spend today, this ISO week, this month and in its limit's period, in µUSD; parameters:
 * key id, first day of each (today, week, month, period), and the earliest of them.
 */
export async function keyUsage(
  db: Db,
  keyId: string,
  days: { today: string; week: string; month: string; period: string },
): Promise<{ todayMicros: number; weekMicros: number; monthMicros: number; periodMicros: number }> {
  const from = [days.today, days.week, days.month, days.period].sort()[0]!;
  const row = await db.get<KeyUsageRow>(
    `SELECT CAST(SUM(CASE WHEN day >= $2 THEN cost_micros ELSE 0 END) AS BIGINT) AS today,
            CAST(SUM(CASE WHEN day >= $3 THEN cost_micros ELSE 0 END) AS BIGINT) AS week,
            CAST(SUM(CASE WHEN day >= $4 THEN cost_micros ELSE 0 END) AS BIGINT) AS month,
            CAST(SUM(CASE WHEN day >= $5 THEN cost_micros ELSE 0 END) AS BIGINT) AS period
     FROM usage_daily WHERE key_id = $1 AND day >= $6`,
    [keyId, days.today, days.week, days.month, days.period, from],
  );
  return {
    todayMicros: Number(row?.today ?? 0),
    weekMicros: Number(row?.week ?? 0),
    monthMicros: Number(row?.month ?? 0),
    periodMicros: Number(row?.period ?? 0),
  };
}
