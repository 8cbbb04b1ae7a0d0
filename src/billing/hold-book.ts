import type { RetryReport } from '../shared/retry-episode.ts';
import { KEY_ROOM_QUERY, type KeyRoomRow, toKeyRoom } from '../store/key-spend.ts';
import type { SettledAccounts } from '../store/ledger-repo.ts';
import type { KeyBudget, Settlement } from '../core/records.ts';
import type { Store } from '../store/store.ts';

/**
 * Where credit is reserved for requests in flight. A hold is released when the request's charge commits,
 * never before, so concurrent requests can never spend more than the balance.
 */
/** What a hold asks for: the request, its account, the amount, the time, when it lapses, and the key's budget. */
export type HoldAsk = [
  requestId: string,
  accountId: string,
  amountMicros: number,
  now: number,
  expiresAt: number,
  key?: KeyBudget,
];

/** What the request path and the key controls ask of holds, whichever book keeps them. */
export interface HoldBook {
  /** Whether holds are rows in the store, deleted by each settlement's transaction. */
  readonly rowsInStore: boolean;
  /**
   * Reserves `amountMicros` if the account can afford it and, given `key`, the key's limit has room for it
   * too (both checked in one atomic step); false (nothing taken) if not.
   */
  hold(...ask: HoldAsk): Promise<boolean>;
  /**
   * `hold` without a promise, for a book that needs no I/O to decide (in-process holds): the request path calls
   * it when present. Throws where `hold` would reject.
   */
  holdNow?(...ask: HoldAsk): boolean;
  /** The settlements of these requests have committed (at `now`, clock time): their holds are gone. */
  settled(requestIds: readonly string[], now: number): void;
  /** What this book holds for the account beyond the database's hold rows (requests in flight). */
  heldMicros(accountId: string): Promise<number>;
  /** What this instance's own holds reserve for the key beyond the database's hold rows (0 where none). */
  keyHeldMicros(keyId: string): number;
  /** What every instance's live holds reserve for the key beyond the database's hold rows, read where they live. */
  keyHeldNow(accountId: string, keyId: string): Promise<number>;
  /** Journals a finished request where a surviving instance finds it; resolves before the answer ends. */
  finished?(settlement: Settlement): Promise<void>;
}

/**
 * Holds kept outside the database for a whole fleet (Redis): the book has a lifecycle, an instance lease,
 * balances of its own to keep in step with the ledger, and a readiness of its own.
 */
export interface SharedHoldBook extends HoldBook {
  /** The instance id its holds are kept under. */
  readonly instanceId: string;
  /** Where the book's retry loops (heartbeat, releases) are counted. */
  retryReport: RetryReport;
  /** A batch committed, with what it charged per account: applied to the book's balances. */
  committed(batch: readonly Settlement[], charged: SettledAccounts): void;
  /** Another writer moved the account's ledger to `version`: a copy of its balance older than that is dropped. */
  forget(accountId: string, version: number): Promise<void>;
  /** The instances holding credit where this book does (live leases). */
  liveInstances(now: number): Promise<string[]>;
  /** Whether a hold can be taken now without waiting (the generation is known, no fence, scripts loaded). */
  ready(): boolean;
  /** Starts the book's own heartbeat; finished requests of dead instances go to `charge`. */
  start(charge: (settlement: Settlement) => void): Promise<void>;
  /** A clean stop, after every settlement committed: releases what this instance still holds. */
  close(): Promise<void>;
}

/** The shared side of a book, when it has one. */
export function sharedSide(book: HoldBook): SharedHoldBook | undefined {
  return 'liveInstances' in book ? (book as SharedHoldBook) : undefined;
}

/** The book for the store: durable, row-locked holds on a shared database; in-process holds on SQLite. */
export function createHoldBook(store: Store): HoldBook {
  const { db } = store;
  const readNow = db.readNow?.bind(db);
  return readNow && db.writes !== undefined
    ? new ProcessHoldBook(
        readNow,
        () => db.writes ?? NaN,
        (accountId, now) => store.ledger.balanceNow(accountId, now),
      )
    : new DatabaseHoldBook(store);
}

/** Several instances share PostgreSQL: the hold is a row, taken under the account's row lock. */
class DatabaseHoldBook implements HoldBook {
  readonly rowsInStore = true;
  readonly #store: Store;
  constructor(store: Store) {
    this.#store = store;
  }
  hold(...ask: HoldAsk): Promise<boolean> {
    return this.#store.ledger.hold(...ask);
  }
  settled(): void {
    // The settlement's own transaction deleted the hold row.
  }
  heldMicros(): Promise<number> {
    return Promise.resolve(0); // the hold rows are the database's, counted by its balance
  }
  keyHeldMicros(): number {
    return 0; // the hold rows are the database's, counted with the key's spend
  }
  keyHeldNow(): Promise<number> {
    return Promise.resolve(0);
  }
}

type ReadNow = <T>(sql: string, params?: readonly (string | number | null)[]) => T | undefined;
/** `LedgerRepo.balanceNow`: the account's balance read synchronously. */
type BalanceNow = (
  accountId: string,
  now: number,
) => { availableMicros: number; nextExpiry: number | null } | undefined;

/** Accounts whose balance is remembered; past this many, the memory starts over. */
const MAX_REMEMBERED = 50_000;
/** Accounts read again right after a settlement commits, at most, so a batch never blocks the loop for long. */
const MAX_REFRESHED = 32;

/**
 * The embedded store has exactly one instance, and a restart voids every hold anyway, so holds live in this
 * process: one synchronous read of the account's credit and a map update, with no await in between, so no
 * other request can slip through. No write per request.
 */
class ProcessHoldBook implements HoldBook {
  readonly rowsInStore = false;
  readonly #byAccount = new Map<string, number>();
  readonly #byRequest = new Map<string, { accountId: string; amountMicros: number; keyId?: string }>();
  /** Per-key controls: what requests in flight hold, by key. */
  readonly #byKey = new Map<string, number>();
  /** Per-key controls: each limited key's spend this period as last read, valid while no write happened. */
  readonly #keySpend = new Map<string, { writes: number; fromDay: string; spentMicros: number }>();
  /**
   * Each account's available credit as last read, valid while the database has seen no write since and
   * no grant it counts has expired: under load most requests skip the read (settlements commit every 10 ms).
   */
  readonly #balances = new Map<string, { writes: number; until: number; availableMicros: number }>();
  readonly #readNow: ReadNow;
  readonly #writes: () => number;
  readonly #balanceNow: BalanceNow;

  constructor(readNow: ReadNow, writes: () => number, balanceNow: BalanceNow) {
    this.#readNow = readNow;
    this.#writes = writes;
    this.#balanceNow = balanceNow;
  }

  async hold(...ask: HoldAsk): Promise<boolean> {
    return this.holdNow(...ask);
  }

  holdNow(
    requestId: string,
    accountId: string,
    amountMicros: number,
    now: number,
    _expiresAt: number,
    key?: KeyBudget,
  ): boolean {
    const credit = this.#available(accountId, now);
    if (credit === undefined) return false;
    const held = this.#heldOf(accountId);
    const available = credit - held;
    if (available < amountMicros || available <= 0) return false;
    if (key && !this.#keyHasRoom(key, amountMicros)) return false;
    this.#byAccount.set(accountId, held + amountMicros);
    if (key) {
      this.#byKey.set(key.keyId, this.keyHeldMicros(key.keyId) + amountMicros);
      this.#byRequest.set(requestId, { accountId, amountMicros, keyId: key.keyId });
    } else this.#byRequest.set(requestId, { accountId, amountMicros });
    return true;
  }

  /** Per-key controls: limit − spend this period − this book's holds of the key ≥ the amount. */
  #keyHasRoom(key: KeyBudget, amountMicros: number): boolean {
    if (key.limitMicros === null) return true;
    const writes = this.#writes();
    let known = this.#keySpend.get(key.keyId);
    if (!known || known.writes !== writes || known.fromDay !== key.fromDay) {
      const { spentMicros } = toKeyRoom(this.#readNow<KeyRoomRow>(KEY_ROOM_QUERY, [key.keyId, key.fromDay]));
      if (this.#keySpend.size >= MAX_REMEMBERED) this.#keySpend.clear();
      known = { writes, fromDay: key.fromDay, spentMicros };
      this.#keySpend.set(key.keyId, known);
    }
    return key.limitMicros - known.spentMicros - this.keyHeldMicros(key.keyId) >= amountMicros;
  }

  keyHeldMicros(keyId: string): number {
    return this.#byKey.get(keyId) ?? 0;
  }

  keyHeldNow(_accountId: string, keyId: string): Promise<number> {
    return Promise.resolve(this.keyHeldMicros(keyId));
  }

  /** The account's available credit without this book's holds; undefined for an unknown account. */
  #available(accountId: string, now: number): number | undefined {
    const writes = this.#writes();
    const known = this.#balances.get(accountId);
    if (known && known.writes === writes && now < known.until) return known.availableMicros;
    return this.#read(accountId, writes, now);
  }

  #read(accountId: string, writes: number, now: number): number | undefined {
    const balance = this.#balanceNow(accountId, now);
    if (!balance) return undefined;
    if (this.#balances.size >= MAX_REMEMBERED) this.#balances.clear();
    const { availableMicros } = balance;
    this.#balances.set(accountId, { writes, until: balance.nextExpiry ?? Infinity, availableMicros });
    return availableMicros;
  }

  settled(requestIds: readonly string[], now: number): void {
    const charged = new Set<string>();
    for (const requestId of requestIds) {
      const hold = this.#byRequest.get(requestId);
      if (!hold) continue;
      this.#byRequest.delete(requestId);
      charged.add(hold.accountId);
      const left = (this.#byAccount.get(hold.accountId) ?? 0) - hold.amountMicros;
      if (left > 0) this.#byAccount.set(hold.accountId, left);
      else this.#byAccount.delete(hold.accountId);
      if (hold.keyId !== undefined) {
        const keyLeft = this.keyHeldMicros(hold.keyId) - hold.amountMicros;
        if (keyLeft > 0) this.#byKey.set(hold.keyId, keyLeft);
        else this.#byKey.delete(hold.keyId);
      }
    }
    // The commit made every remembered balance stale. The accounts it charged are read again here, off the
    // request path: otherwise the next request of each pays the read, and a lone caller's every request does.
    const writes = this.#writes();
    let refreshed = 0;
    for (const accountId of charged) {
      if (refreshed++ === MAX_REFRESHED) break;
      this.#read(accountId, writes, now);
    }
  }

  heldMicros(accountId: string): Promise<number> {
    return Promise.resolve(this.#heldOf(accountId));
  }

  #heldOf(accountId: string): number {
    return this.#byAccount.get(accountId) ?? 0;
  }
}
