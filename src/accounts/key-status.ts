import type { HoldBook } from '../billing/hold-book.ts';
import { KEY_ROOM_QUERY, type KeyRoomRow, keyUsage, toKeyRoom } from '../store/key-spend.ts';
import type { ApiKeyRecord } from '../core/records.ts';
import type { ChatPathStore, Store } from '../store/store.ts';
import {
  dayOf,
  keyBudgetOf,
  limitRefusalMessage,
  periodEndMs,
  periodFirstDay,
  periodStartMs,
} from './key-controls.ts';

/** A key's limit and what it has used, in µUSD, as `GET /api/key` shows it. */
export interface KeyStatus {
  todayMicros: number;
  weekMicros: number;
  monthMicros: number;
  /** Spent in the limit's current period (all time for `never`; 0 without a limit). */
  periodMicros: number;
  /** Reserved by the key's requests in flight. */
  heldMicros: number;
  /** limit − period spend − held, never below 0; null without a limit. */
  remainingMicros: number | null;
  periodStartedAt: number | null;
  resetsAt: number | null;
}

/**
 * What the key holds in flight: its hold rows (shared database) plus the book's own, read live from Redis
 * when holds live there (every instance's), else the in-process book's (embedded).
 */
async function keyHeldMicros(store: Store, holds: HoldBook, key: ApiKeyRecord): Promise<number> {
  const [row, held] = await Promise.all([
    store.db.get<{ held: number | string | null }>(
      'SELECT CAST(SUM(amount_micros) AS BIGINT) AS held FROM holds WHERE key_id = $1',
      [key.id],
    ),
    holds.keyHeldNow(key.accountId, key.id),
  ]);
  return Number(row?.held ?? 0) + held;
}

/** Reads the key's usage today, this ISO week, this month and in its limit's period, and what remains. */
export async function readKeyStatus(
  store: Store,
  holds: HoldBook,
  key: ApiKeyRecord,
  now: number,
): Promise<KeyStatus> {
  const limitMicros = key.controls?.spendLimitMicros ?? null;
  const period = key.controls?.limitPeriod ?? 'never';
  const usage = await keyUsage(store.db, key.id, {
    today: dayOf(periodStartMs('daily', now)),
    week: dayOf(periodStartMs('weekly', now)),
    month: dayOf(periodStartMs('monthly', now)),
    period: periodFirstDay(period, now),
  });
  const heldMicros = await keyHeldMicros(store, holds, key);
  const limited = limitMicros !== null;
  return {
    todayMicros: usage.todayMicros,
    weekMicros: usage.weekMicros,
    monthMicros: usage.monthMicros,
    periodMicros: limited ? usage.periodMicros : 0,
    heldMicros,
    remainingMicros: limited ? Math.max(0, limitMicros - usage.periodMicros - heldMicros) : null,
    periodStartedAt: limited && period !== 'never' ? periodStartMs(period, now) : null,
    resetsAt: limited ? periodEndMs(period, now) : null,
  };
}

/**
 * After a refused hold: the 402 message when the key's own limit is what has no room for `holdMicros`,
 * else undefined (the account's balance refused it).
 */
export async function keyLimitRefusal(
  store: Pick<ChatPathStore, 'db'>,
  holds: HoldBook,
  key: ApiKeyRecord,
  holdMicros: number,
  now: number,
): Promise<string | undefined> {
  const budget = keyBudgetOf(key, now);
  if (budget.limitMicros === null || !key.controls) return undefined;
  const room = toKeyRoom(await store.db.get<KeyRoomRow>(KEY_ROOM_QUERY, [key.id, budget.fromDay]));
  const heldMicros = room.heldMicros + holds.keyHeldMicros(key.id);
  if (budget.limitMicros - room.spentMicros - heldMicros >= holdMicros) return undefined;
  return limitRefusalMessage(key.controls, room.spentMicros, heldMicros, holdMicros, now);
}
