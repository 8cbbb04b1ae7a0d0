import type { Db, SqlParam } from './db.ts';
import { keyHasRoom } from './key-spend.ts';
import type { CreditGrant, GrantKind, KeyBudget, Settlement } from './records.ts';
import { utcDay } from '../shared/time.ts';

interface GrantRow {
  id: string;
  account_id: string;
  kind: GrantKind;
  amount_micros: number;
  remaining_micros: number;
  expires_at: number;
  created_at: number;
  source: string | null;
}

const toGrant = (row: GrantRow): CreditGrant => ({
  id: row.id,
  accountId: row.account_id,
  kind: row.kind,
  amountMicros: row.amount_micros,
  remainingMicros: row.remaining_micros,
  expiresAt: row.expires_at,
  createdAt: row.created_at,
  source: row.source,
});

export interface Balance {
  /** Unexpired credit still unspent. */
  creditMicros: number;
  /** Reserved by requests in flight. */
  heldMicros: number;
  /** Owed by a postpaid account beyond its credit. */
  debtMicros: number;
  creditLimitMicros: number;
  /** What a new request may still reserve: credit − held − debt + credit limit. */
  availableMicros: number;
}

export interface BalanceRow {
  credit: number | null;
  /** When the first grant the credit counts runs out; the balance must be read again then. */
  next_expiry: number | null;
  held: number;
  debt: number;
  credit_limit: number;
}

/**
 * One account's unexpired credit (and when its first counted grant expires), holds, debt and credit limit;
 * parameters: account id, now.
 */
const BALANCE_QUERY = `SELECT (SELECT CAST(SUM(remaining_micros) AS BIGINT) FROM credit_grants WHERE account_id = $1 AND expires_at > $2) AS credit,
       (SELECT MIN(expires_at) FROM credit_grants WHERE account_id = $1 AND expires_at > $2 AND remaining_micros > 0) AS next_expiry,
       held_micros AS held, debt_micros AS debt, credit_limit_micros AS credit_limit
FROM accounts WHERE id = $1`;

/** BALANCE_QUERY with the account's ledger version and a key's spend; parameters: account id, now, key, day. */
const VERSIONED_BALANCE_QUERY = BALANCE_QUERY.replace(
  'credit_limit_micros AS credit_limit',
  `credit_limit_micros AS credit_limit, ledger_version AS version,
       (SELECT CAST(SUM(cost_micros) AS BIGINT) FROM usage_daily WHERE key_id = $3 AND day >= $4) AS key_spent`,
);

export interface VersionedBalance {
  version: number;
  /** Credit − held rows − debt + credit limit. */
  availableMicros: number;
  /** When the first counted grant expires (the balance is stale from then). */
  until: number;
  keySpentMicros: number;
}

/** The balance of a BALANCE_QUERY row (all zero for an unknown account). */
export function toBalance(row: BalanceRow | undefined): Balance {
  const creditMicros = Number(row?.credit ?? 0);
  const heldMicros = row?.held ?? 0;
  const debtMicros = row?.debt ?? 0;
  const creditLimitMicros = row?.credit_limit ?? 0;
  return {
    creditMicros,
    heldMicros,
    debtMicros,
    creditLimitMicros,
    availableMicros: creditMicros - heldMicros - debtMicros + creditLimitMicros,
  };
}

/** The UTC day lives in src/shared/time.ts; exported here too for the ledger's callers and tests. */
export { utcDay };

/** Credit grants, holds and settlement: the money. Every method keeps credit − held − debt consistent. */
export class LedgerRepo {
  readonly #db: Db;
  #instanceId: string | null = null;
  constructor(db: Db) {
    this.#db = db;
  }

  async addGrant(grant: CreditGrant): Promise<void> {
    await this.#db.run(
      `INSERT INTO credit_grants (id, account_id, kind, amount_micros, remaining_micros, expires_at, created_at, source)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        grant.id,
        grant.accountId,
        grant.kind,
        grant.amountMicros,
        grant.remainingMicros,
        grant.expiresAt,
        grant.createdAt,
        grant.source,
      ],
    );
  }

  /** Unexpired grants, soonest expiry first (the order usage draws them in). */
  async liveGrants(accountId: string, now: number): Promise<CreditGrant[]> {
    const rows = await this.#db.all<GrantRow>(
      'SELECT * FROM credit_grants WHERE account_id = $1 AND expires_at > $2 ORDER BY expires_at, created_at, id',
      [accountId, now],
    );
    return rows.map(toGrant);
  }

  async balance(accountId: string, now: number): Promise<Balance> {
    return toBalance(await this.#db.get<BalanceRow>(BALANCE_QUERY, [accountId, now]));
  }

  /**
   * The balance read synchronously, on engines that run in-process (`Db.readNow`; throws elsewhere): no other
   * JavaScript runs between this read and what the caller does next, which makes a check-and-reserve atomic.
   * Undefined for an unknown account; `nextExpiry` is when the first grant it counts runs out (read again then).
   */
  balanceNow(accountId: string, now: number): (Balance & { nextExpiry: number | null }) | undefined {
    if (!this.#db.readNow) throw new Error('balanceNow needs an engine that runs in-process');
    const row = this.#db.readNow<BalanceRow>(BALANCE_QUERY, [accountId, now]);
    return row && { ...toBalance(row), nextExpiry: row.next_expiry };
  }

  /**
   * Reserves `amountMicros` for a request if the account can still afford it; false (and nothing taken) if not.
   * The account row is locked first, so concurrent holds see each other and never exceed the balance.
   */
  async hold(
    requestId: string,
    accountId: string,
    amountMicros: number,
    now: number,
    expiresAt: number,
    key?: KeyBudget,
  ): Promise<boolean> {
    return this.#db.transaction(async (tx) => {
      const account = await tx.get<{ held: number; debt: number; credit_limit: number }>(
        `SELECT held_micros AS held, debt_micros AS debt, credit_limit_micros AS credit_limit FROM accounts WHERE id = $1 ${tx.forUpdate}`,
        [accountId],
      );
      if (!account) return false;
      const credit = await tx.get<{ s: number | null }>(
        'SELECT CAST(SUM(remaining_micros) AS BIGINT) AS s FROM credit_grants WHERE account_id = $1 AND expires_at > $2',
        [accountId, now],
      );
      const available = Number(credit?.s ?? 0) - account.held - account.debt + account.credit_limit;
      if (available < amountMicros || available <= 0) return false;
      // Per-key controls: the key's limit, checked under the same account lock.
      if (key && !(await keyHasRoom(tx, key, amountMicros))) return false;
      await tx.run('UPDATE accounts SET held_micros = held_micros + $2 WHERE id = $1', [
        accountId,
        amountMicros,
      ]);
      await tx.run(
        'INSERT INTO holds (request_id, account_id, amount_micros, created_at, expires_at, key_id, instance_id) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [requestId, accountId, amountMicros, now, expiresAt, key?.keyId ?? null, this.#instanceId],
      );
      return true;
    });
  }

  /**
   * Applies finished requests in one transaction: releases each hold row (unless `holdRows` is false: holds
   * live in process memory or in Redis), charges the actual cost against the grants that expire first,
   * records usage and the daily rollup. A request id already settled changes nothing. Work is aggregated per
   * batch: one usage record per request, but one charge per account and one rollup update per (day, account,
   * key, model). Returns, per account charged, its new ledger version and what was charged (Redis holds
   * apply it to the balance they know).
   */
  async settle(
    settlements: readonly Settlement[],
    options: { holdRows?: boolean } = {},
  ): Promise<SettledAccounts> {
    if (settlements.length === 0) return new Map();
    // One lock order (by account) for every batch, so concurrent batches on PostgreSQL cannot deadlock.
    const ordered = [...settlements].sort((a, b) =>
      a.accountId < b.accountId ? -1 : a.accountId > b.accountId ? 1 : 0,
    );
    const holdRows = options.holdRows ?? true;
    return this.#db.transaction(async (tx) => {
      // This transaction moves each account's version once and applies its charge to Redis's balance itself.
      if (tx.capabilities.ledgerTriggers) await tx.run("SET LOCAL tollgate.settling = 'on'");
      const charged = tx.capabilities.setBasedSettlement
        ? await settleBatch(tx, ordered, holdRows)
        : await settleRowByRow(tx, ordered, holdRows);
      await addReplayedAccounts(tx, ordered, charged);
      return charged;
    });
  }

  /**
   * The account's spendable balance with its ledger version, and the key's charged spend since `fromDay`, in
   * one statement (one snapshot): what Redis holds are seeded from. Undefined for an unknown account.
   */
  async versionedBalance(
    accountId: string,
    now: number,
    key?: { keyId: string; fromDay: string },
  ): Promise<VersionedBalance | undefined> {
    const row = await this.#db.get<BalanceRow & { version: number | string; key_spent: number | null }>(
      VERSIONED_BALANCE_QUERY,
      [accountId, now, key?.keyId ?? '', key?.fromDay ?? ''],
    );
    if (!row) return undefined;
    return {
      version: Number(row.version),
      availableMicros: toBalance(row).availableMicros,
      until: row.next_expiry === null ? Number.MAX_SAFE_INTEGER : Number(row.next_expiry),
      keySpentMicros: Number(row.key_spent ?? 0),
    };
  }

  /**
   * Holds taken from now on belong to this instance (its lease, renewed by `renewInstanceLease`): when the
   * lease runs out, any instance's `releaseOrphanedHolds` gives them back.
   */
  useInstance(instanceId: string): void {
    this.#instanceId = instanceId;
  }

  /** The heartbeat: this instance is alive until `expiresAt`. */
  async renewInstanceLease(instanceId: string, now: number, expiresAt: number): Promise<void> {
    await this.#db.run(
      `INSERT INTO instance_leases (instance_id, heartbeat_at, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (instance_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at`,
      [instanceId, now, expiresAt],
    );
  }

  /**
   * Releases the holds of instances whose lease has run out (or that never had one) and forgets those
   * leases; returns how many holds. Nothing is charged: a request that never settled never finished.
   */
  async releaseOrphanedHolds(now: number): Promise<number> {
    return this.#db.transaction(async (tx) => {
      const holds = await tx.all<{ request_id: string }>(
        `SELECT request_id FROM holds WHERE instance_id IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM instance_leases l WHERE l.instance_id = holds.instance_id AND l.expires_at > $1)
         ORDER BY account_id`,
        [now],
      );
      for (const hold of holds) await releaseHold(tx, hold.request_id);
      await tx.run('DELETE FROM instance_leases WHERE expires_at <= $1', [now]);
      return holds.length;
    });
  }

  /** A clean stop, after every settlement committed: what this instance still holds is released now. */
  async endInstanceLease(instanceId: string): Promise<number> {
    return this.#db.transaction(async (tx) => {
      const holds = await tx.all<{ request_id: string }>(
        'SELECT request_id FROM holds WHERE instance_id = $1 ORDER BY account_id',
        [instanceId],
      );
      for (const hold of holds) await releaseHold(tx, hold.request_id);
      await tx.run('DELETE FROM instance_leases WHERE instance_id = $1', [instanceId]);
      return holds.length;
    });
  }

  /** Releases holds whose request can no longer settle (its instance died); returns how many. */
  async releaseExpiredHolds(now: number): Promise<number> {
    return this.#db.transaction(async (tx) => {
      const holds = await tx.all<{ request_id: string; account_id: string; amount_micros: number }>(
        'SELECT request_id, account_id, amount_micros FROM holds WHERE expires_at <= $1 ORDER BY account_id',
        [now],
      );
      for (const hold of holds) await releaseHold(tx, hold.request_id);
      return holds.length;
    });
  }
}

/** Deletes a hold and gives its amount back; 0 if there was none. */
async function releaseHold(tx: Db, requestId: string): Promise<number> {
  const hold = await tx.get<{ account_id: string; amount_micros: number }>(
    'DELETE FROM holds WHERE request_id = $1 RETURNING account_id, amount_micros',
    [requestId],
  );
  if (!hold) return 0;
  await tx.run('UPDATE accounts SET held_micros = held_micros - $2 WHERE id = $1', [
    hold.account_id,
    hold.amount_micros,
  ]);
  return hold.amount_micros;
}

/** `($1, $2), ($3, $4) …` for rows of `width` values, with each value wrapped by `cast` (by column). */
function valuesList(
  rows: number,
  width: number,
  cast: (column: number, placeholder: string) => string,
): string {
  const out: string[] = [];
  for (let r = 0; r < rows; r++) {
    const cells: string[] = [];
    for (let c = 0; c < width; c++) cells.push(cast(c, `$${r * width + c + 1}`));
    out.push(`(${cells.join(', ')})`);
  }
  return out.join(', ');
}

const asBigint = (placeholder: string): string => `CAST(${placeholder} AS BIGINT)`;
/** At most this many rows per statement (13 values each: far below both engines' parameter limits). */
const ROWS_PER_STATEMENT = 1_000;

/**
 * One batch in a fixed number of statements whatever its size (each a multi-row VALUES list): the usage
 * records, the holds released, the accounts locked (in id order, so concurrent batches cannot deadlock),
 * the grants drawn, debts, activity and the daily rollup. Per-request round trips were what made
 * settlement slow on a networked database.
 */
async function settleBatch(
  tx: Db,
  settlements: readonly Settlement[],
  holdRows: boolean,
): Promise<SettledAccounts> {
  // The records go first: a request id settled before (a retried batch, a replay) stops here, charging nothing.
  const inserted = new Set<string>();
  for (let i = 0; i < settlements.length; i += ROWS_PER_STATEMENT) {
    const chunk = settlements.slice(i, i + ROWS_PER_STATEMENT);
    const rows = await tx.all<{ request_id: string }>(
      `${INSERT_USAGE_RECORD} ${valuesList(chunk.length, 13, (_, p) => p)} ON CONFLICT (request_id) DO NOTHING RETURNING request_id`,
      chunk.flatMap(usageRecordRow),
    );
    for (const row of rows) inserted.add(row.request_id);
  }
  // A request id twice in one batch is recorded (and charged) once: its first settlement.
  const fresh = settlements.filter((s) => inserted.delete(s.requestId));
  if (fresh.length === 0) return new Map();
  const accountIds = [...new Set(fresh.map((s) => s.accountId))].sort();
  await tx.all(
    `SELECT id FROM accounts WHERE id IN (${accountIds.map((_, i) => `$${i + 1}`).join(', ')}) ORDER BY id ${tx.forUpdate}`,
    accountIds,
  );

  const released = new Map<string, number>();
  if (holdRows) {
    for (let i = 0; i < fresh.length; i += ROWS_PER_STATEMENT) {
      const chunk = fresh.slice(i, i + ROWS_PER_STATEMENT);
      const holds = await tx.all<{ account_id: string; amount_micros: number }>(
        `DELETE FROM holds WHERE request_id IN (${chunk.map((_, j) => `$${j + 1}`).join(', ')}) RETURNING account_id, amount_micros`,
        chunk.map((s) => s.requestId),
      );
      for (const hold of holds)
        released.set(hold.account_id, (released.get(hold.account_id) ?? 0) + Number(hold.amount_micros));
    }
  }

  const groups = groupBy(fresh, (s) => s.accountId);
  const dues = new Map<string, number>();
  const lastOf = new Map<string, number>();
  for (const [accountId, group] of groups) {
    const total = group.reduce((sum, s) => sum + s.costMicros, 0);
    if (total > 0) dues.set(accountId, total);
    lastOf.set(
      accountId,
      group.reduce((latest, s) => Math.max(latest, s.createdAt), 0),
    );
  }
  const short = await chargeAll(tx, dues, lastOf);

  // Held amounts given back and activity, one statement for every account of the batch.
  const accountRows = accountIds.map((id) => {
    const active = groups
      .get(id)!
      .filter((s) => s.status === 'ok')
      .reduce((latest, s) => Math.max(latest, s.createdAt), 0);
    return [id, released.get(id) ?? 0, active] as const;
  });
  const versions = await tx.all<{ id: string; ledger_version: number | string }>(
    `UPDATE accounts SET held_micros = held_micros - v.column2, ledger_version = ledger_version + 1,
       last_active_at = CASE WHEN v.column3 > 0 AND (last_active_at IS NULL OR last_active_at < v.column3) THEN v.column3 ELSE last_active_at END
     FROM (VALUES ${valuesList(accountRows.length, 3, (c, p) => (c === 0 ? p : asBigint(p)))}) AS v
     WHERE accounts.id = v.column1 RETURNING accounts.id, accounts.ledger_version`,
    accountRows.flat(),
  );

  // What the credit could not cover is put on the latest requests, so each record says what it really paid.
  const uncollected = new Map<string, number>();
  for (const [accountId, missing] of short) {
    const group = groups.get(accountId)!;
    let left = missing;
    for (let i = group.length - 1; i >= 0 && left > 0; i--) {
      const s = group[i]!;
      const part = Math.min(left, s.costMicros);
      if (part === 0) continue;
      uncollected.set(s.requestId, part);
      left -= part;
    }
  }
  if (uncollected.size > 0) {
    const rows = [...uncollected];
    await tx.run(
      `UPDATE usage_records SET uncollected_micros = v.column2
       FROM (VALUES ${valuesList(rows.length, 2, (c, p) => (c === 0 ? p : asBigint(p)))}) AS v
       WHERE usage_records.request_id = v.column1`,
      rows.flat(),
    );
  }

  const rollup = [
    ...groupBy(
      fresh,
      (s) => `${utcDay(s.createdAt)}\u0000${s.accountId}\u0000${s.keyId}\u0000${s.model}`,
    ).values(),
  ].map((group) => {
    const first = group[0]!;
    const sum = (pick: (s: Settlement) => number): number => group.reduce((total, s) => total + pick(s), 0);
    return [
      utcDay(first.createdAt),
      first.accountId,
      first.keyId,
      first.model,
      group.length,
      sum((s) => s.promptTokens),
      sum((s) => s.completionTokens),
      sum((s) => s.costMicros - (uncollected.get(s.requestId) ?? 0)),
    ];
  });
  for (let i = 0; i < rollup.length; i += ROWS_PER_STATEMENT) {
    const chunk = rollup.slice(i, i + ROWS_PER_STATEMENT);
    await tx.run(
      `INSERT INTO usage_daily (day, account_id, key_id, model, requests, prompt_tokens, completion_tokens, cost_micros)
       VALUES ${valuesList(chunk.length, 8, (c, p) => (c < 4 ? p : asBigint(p)))}
       ON CONFLICT (day, account_id, key_id, model) DO UPDATE SET requests = usage_daily.requests + excluded.requests,
         prompt_tokens = usage_daily.prompt_tokens + excluded.prompt_tokens,
         completion_tokens = usage_daily.completion_tokens + excluded.completion_tokens,
         cost_micros = usage_daily.cost_micros + excluded.cost_micros`,
      chunk.flat(),
    );
  }
  return settledAccounts(
    fresh,
    uncollected,
    versions.map((row) => [row.id, Number(row.ledger_version)]),
  );
}

/** The in-process engine's path: a statement costs microseconds there, and one per row is fastest. */
async function settleRowByRow(
  tx: Db,
  settlements: readonly Settlement[],
  holdRows: boolean,
): Promise<SettledAccounts> {
  // The records go first: a request id settled before (a retried batch, a replay) stops here, charging nothing.
  const fresh: Settlement[] = [];
  for (const s of settlements) {
    const inserted = await tx.run(
      `${INSERT_USAGE_RECORD} ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (request_id) DO NOTHING`,
      usageRecordRow(s),
    );
    if (inserted === 1) fresh.push(s);
  }
  if (holdRows) for (const s of fresh) await releaseHold(tx, s.requestId);

  const uncollected = new Map<string, number>();
  const versions: [string, number][] = [];
  for (const [accountId, group] of groupBy(fresh, (s) => s.accountId)) {
    const total = group.reduce((sum, s) => sum + s.costMicros, 0);
    const last = group.reduce((latest, s) => Math.max(latest, s.createdAt), 0);
    let short = total > 0 ? await charge(tx, accountId, total, last) : 0;
    // What the credit could not cover is put on the latest requests, so each record says what it really paid.
    for (let i = group.length - 1; i >= 0 && short > 0; i--) {
      const s = group[i]!;
      const part = Math.min(short, s.costMicros);
      if (part === 0) continue;
      uncollected.set(s.requestId, part);
      await tx.run('UPDATE usage_records SET uncollected_micros = $2 WHERE request_id = $1', [
        s.requestId,
        part,
      ]);
      short -= part;
    }
    const active = group
      .filter((s) => s.status === 'ok')
      .reduce((latest, s) => Math.max(latest, s.createdAt), 0);
    const row = await tx.get<{ ledger_version: number | string }>(
      `UPDATE accounts SET ledger_version = ledger_version + 1,
         last_active_at = CASE WHEN $2 > 0 AND (last_active_at IS NULL OR last_active_at < $2) THEN $2 ELSE last_active_at END
       WHERE id = $1 RETURNING ledger_version`,
      [accountId, active],
    );
    if (row) versions.push([accountId, Number(row.ledger_version)]);
  }

  for (const group of groupBy(
    fresh,
    (s) => `${utcDay(s.createdAt)}\u0000${s.accountId}\u0000${s.keyId}\u0000${s.model}`,
  ).values()) {
    const first = group[0]!;
    const sum = (pick: (s: Settlement) => number): number => group.reduce((total, s) => total + pick(s), 0);
    await tx.run(
      `INSERT INTO usage_daily (day, account_id, key_id, model, requests, prompt_tokens, completion_tokens, cost_micros)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (day, account_id, key_id, model) DO UPDATE SET requests = usage_daily.requests + excluded.requests,
         prompt_tokens = usage_daily.prompt_tokens + excluded.prompt_tokens,
         completion_tokens = usage_daily.completion_tokens + excluded.completion_tokens,
         cost_micros = usage_daily.cost_micros + excluded.cost_micros`,
      [
        utcDay(first.createdAt),
        first.accountId,
        first.keyId,
        first.model,
        group.length,
        sum((s) => s.promptTokens),
        sum((s) => s.completionTokens),
        sum((s) => s.costMicros - (uncollected.get(s.requestId) ?? 0)),
      ],
    );
  }
  return settledAccounts(fresh, uncollected, versions);
}

/**
 * Per account of a settlement: its new ledger version, the µUSD charged, and per key and day. `replayed`: every
 * settlement of the account in the batch had been recorded before, so nothing was charged now and `version` is
 * the version read (not bumped); their charge committed earlier, possibly unseen by a balance read before it.
 */
export type SettledAccounts = Map<
  string,
  {
    version: number;
    chargedMicros: number;
    keys: { keyId: string; day: string; micros: number }[];
    replayed?: true;
  }
>;

/**
 * Adds the accounts whose every settlement was recorded before (a retried batch whose commit landed though its
 * acknowledgement was lost, a replayed spool, a dead instance's journal), with their current ledger version:
 * the charge happened in an earlier commit whose result nobody saw, and Redis holds must not release those
 * requests' credit against a balance read before it. The insert of a recorded id waited for the commit that
 * recorded it, so the version read here already counts that charge.
 */
async function addReplayedAccounts(
  tx: Db,
  settlements: readonly Settlement[],
  charged: SettledAccounts,
): Promise<void> {
  const replayed = [...new Set(settlements.map((s) => s.accountId))].filter((id) => !charged.has(id));
  if (replayed.length === 0) return;
  const rows = await tx.all<{ id: string; ledger_version: number | string }>(
    `SELECT id, ledger_version FROM accounts WHERE id IN (${replayed.map((_, i) => `$${i + 1}`).join(', ')})`,
    replayed,
  );
  for (const row of rows)
    charged.set(row.id, { version: Number(row.ledger_version), chargedMicros: 0, keys: [], replayed: true });
}

/** What each account of the fresh settlements was charged (cost less what was written off), with versions. */
function settledAccounts(
  fresh: readonly Settlement[],
  uncollected: ReadonlyMap<string, number>,
  versions: readonly (readonly [string, number])[],
): SettledAccounts {
  const out: SettledAccounts = new Map();
  for (const [accountId, version] of versions) out.set(accountId, { version, chargedMicros: 0, keys: [] });
  for (const [, group] of groupBy(
    fresh,
    (s) => `${s.accountId}\u0000${s.keyId}\u0000${utcDay(s.createdAt)}`,
  )) {
    const first = group[0]!;
    const account = out.get(first.accountId);
    if (!account) continue;
    const micros = group.reduce((sum, s) => sum + s.costMicros - (uncollected.get(s.requestId) ?? 0), 0);
    account.chargedMicros += micros;
    account.keys.push({ keyId: first.keyId, day: utcDay(first.createdAt), micros });
  }
  return out;
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

/**
 * Draws each account's due from its unexpired grants, soonest expiry first; what they cannot cover becomes
 * debt on a postpaid account, or is written off on a prepaid one. Three statements for all the accounts.
 * Returns the uncovered amount per account that has one.
 */
async function chargeAll(
  tx: Db,
  dues: Map<string, number>,
  nowOf: Map<string, number>,
): Promise<Map<string, number>> {
  const short = new Map<string, number>();
  if (dues.size === 0) return short;
  // Each account's grants as of its latest request in the batch (a grant that expired before it is not drawn).
  const rows = [...dues.keys()].sort().map((id) => [id, nowOf.get(id)!] as const);
  const grants = await tx.all<{ id: string; account_id: string; remaining_micros: number }>(
    `SELECT g.id, g.account_id, g.remaining_micros FROM credit_grants g
     JOIN (VALUES ${valuesList(rows.length, 2, (c, p) => (c === 0 ? p : asBigint(p)))}) AS v ON g.account_id = v.column1
     WHERE g.expires_at > v.column2 AND g.remaining_micros > 0
     ORDER BY g.account_id, g.expires_at, g.created_at, g.id ${tx.forUpdate ? `${tx.forUpdate} OF g` : ''}`,
    rows.flat(),
  );
  const left = new Map(dues);
  const takes: (string | number)[][] = [];
  for (const grant of grants) {
    const due = left.get(grant.account_id) ?? 0;
    if (due === 0) continue;
    const take = Math.min(due, Number(grant.remaining_micros));
    if (take === 0) continue;
    takes.push([grant.id, take]);
    left.set(grant.account_id, due - take);
  }
  if (takes.length > 0) {
    await tx.run(
      `UPDATE credit_grants SET remaining_micros = remaining_micros - v.column2
       FROM (VALUES ${valuesList(takes.length, 2, (c, p) => (c === 0 ? p : asBigint(p)))}) AS v
       WHERE credit_grants.id = v.column1`,
      takes.flat(),
    );
  }
  const owed = [...left].filter(([, due]) => due > 0);
  if (owed.length === 0) return short;
  const postpaid = await tx.all<{ id: string }>(
    `UPDATE accounts SET debt_micros = debt_micros + v.column2
     FROM (VALUES ${valuesList(owed.length, 2, (c, p) => (c === 0 ? p : asBigint(p)))}) AS v
     WHERE accounts.id = v.column1 AND accounts.credit_limit_micros > 0 RETURNING accounts.id`,
    owed.flat(),
  );
  const inDebt = new Set(postpaid.map((row) => row.id));
  for (const [id, due] of owed) if (!inDebt.has(id)) short.set(id, due);
  return short;
}

/**
 * Draws `costMicros` from the account's unexpired grants, soonest expiry first; what they cannot cover
 * becomes debt on a postpaid account, or is written off on a prepaid one. Returns the uncovered amount.
 */
async function charge(tx: Db, accountId: string, costMicros: number, now: number): Promise<number> {
  const grants = await tx.all<{ id: string; remaining_micros: number }>(
    `SELECT id, remaining_micros FROM credit_grants WHERE account_id = $1 AND expires_at > $2 AND remaining_micros > 0
     ORDER BY expires_at, created_at, id ${tx.forUpdate}`,
    [accountId, now],
  );
  let due = costMicros;
  for (const grant of grants) {
    if (due === 0) break;
    const take = Math.min(due, grant.remaining_micros);
    await tx.run('UPDATE credit_grants SET remaining_micros = remaining_micros - $2 WHERE id = $1', [
      grant.id,
      take,
    ]);
    due -= take;
  }
  if (due === 0) return 0;
  const postpaid = await tx.run(
    'UPDATE accounts SET debt_micros = debt_micros + $2 WHERE id = $1 AND credit_limit_micros > 0',
    [accountId, due],
  );
  return postpaid === 1 ? 0 : due;
}

/** The usage record's columns, in the order `usageRecordRow` gives their values. */
const INSERT_USAGE_RECORD = `INSERT INTO usage_records (request_id, account_id, key_id, model, deployment, prompt_tokens,
  completion_tokens, estimated, cost_micros, status, latency_ms, ttft_ms, created_at) VALUES`;

/** A settlement's usage record as the values of one row (13, in INSERT_USAGE_RECORD's order). */
function usageRecordRow(s: Settlement): SqlParam[] {
  return [
    s.requestId,
    s.accountId,
    s.keyId,
    s.model,
    s.deployment,
    s.promptTokens,
    s.completionTokens,
    s.estimated ? 1 : 0,
    s.costMicros,
    s.status,
    Math.round(s.latencyMs),
    s.ttftMs === null ? null : Math.round(s.ttftMs),
    s.createdAt,
  ];
}
