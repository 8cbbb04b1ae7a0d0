import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { RedisScript, type RedisClient } from '../shared/redis-script.ts';
import { GatewayError } from '../core/gateway-error.ts';
import { RetryEpisode, type RetryReport } from '../shared/retry-episode.ts';
import { StoreUnavailableError } from '../store/db.ts';
import type { LedgerRepo, SettledAccounts } from '../store/ledger-repo.ts';
import type { KeyBudget, Settlement } from '../core/records.ts';
import type { SharedHoldBook } from './hold-book.ts';
import {
  FINISH_SCRIPT,
  HOLD_SCRIPT,
  REASSERT_SCRIPT,
  RELEASE_INSTANCE_SCRIPT,
  SEED_SCRIPT,
  SETTLE_SCRIPT,
} from './redis-hold-scripts.ts';

const holdScript = new RedisScript(HOLD_SCRIPT);
const seedScript = new RedisScript(SEED_SCRIPT);
const settleScript = new RedisScript(SETTLE_SCRIPT);
const releaseInstanceScript = new RedisScript(RELEASE_INSTANCE_SCRIPT);
const finishScript = new RedisScript(FINISH_SCRIPT);
const reassertScript = new RedisScript(REASSERT_SCRIPT);
const SCRIPTS = [holdScript, seedScript, settleScript, releaseInstanceScript, finishScript, reassertScript];

/** How long an instance's Redis lease lasts without a heartbeat, and how often it beats. */
export const REDIS_LEASE_MS = 30_000;
export const REDIS_HEARTBEAT_MS = 1_000;
/**
 * After Redis is found empty (a new generation), no hold is taken for this long, so every live instance has
 * put back its running requests' holds first (each checks the generation on every heartbeat).
 */
export const REASSERT_FENCE_MS = 3 * REDIS_HEARTBEAT_MS;
/** Backoff of the heartbeat and of settlements' releases while Redis fails them. */
const HEARTBEAT_BACKOFF = { initialMs: REDIS_HEARTBEAT_MS, maxMs: 5_000 };
const SETTLE_BACKOFF = { initialMs: REDIS_HEARTBEAT_MS, maxMs: 30_000 };
/** A refused hold reads the ledger again (a top-up may have landed) at most this often per account. */
const SHORT_REREAD_MS = 1_000;

interface MyHold {
  accountId: string;
  amountMicros: number;
  keyId: string;
  entry: string;
}

interface PendingSettle {
  accountId: string;
  requestIds: string[];
  charged: SettledAccounts extends Map<string, infer V> ? V | undefined : never;
}

export interface RedisHoldBookOptions {
  redis: RedisClient;
  ledger: LedgerRepo;
  logger: Logger;
  prefix?: string;
  /** Finished requests of dead instances, found on their journaled holds, are charged through this. */
  charge?: (settlement: Settlement) => void;
}

/**
 * Holds in Redis, for many instances on one PostgreSQL: one Lua script per hold checks the account's
 * spendable balance (read from the ledger with its version, kept current by each committed settlement), its
 * live holds and the key's spending limit, and reserves; no database transaction per request. Each hold
 * belongs to this instance's Redis lease; a survivor releases a dead instance's holds (charging those whose
 * answer was sent, journaled by `finished`). Design and failure cases: docs/decisions.md, "Holds in Redis".
 */
export class RedisHoldBook implements SharedHoldBook {
  readonly rowsInStore = false;
  readonly instanceId: string;
  readonly #redis: RedisClient;
  readonly #ledger: LedgerRepo;
  readonly #logger: Logger;
  readonly #prefix: string;
  #charge: ((settlement: Settlement) => void) | undefined;
  /** This instance's live holds: put back if Redis loses them, released at a clean stop. */
  readonly #mine = new Map<string, MyHold>();
  /** Accounts already in this instance's account index in Redis. */
  readonly #indexed = new Set<string>();
  /** Per key: what its holds reserved at the last refusal (the 402 message says it). */
  readonly #keyHeld = new Map<string, number>();
  readonly #shortReadAt = new Map<string, number>();
  /** Reads of the ledger under way, per account and key: concurrent requests of one account read it once. */
  readonly #seeding = new Map<string, Promise<boolean>>();
  /** Settlements committed to the ledger whose Redis update failed: tried again on each heartbeat. */
  #unapplied: PendingSettle[] = [];
  #generation: string | undefined;
  /** The generation whose Redis has the scripts loaded (a Redis restarted empty has none). */
  #scriptsIn: string | undefined;
  #fenceUntil = 0;
  #timer: NodeJS.Timeout | undefined;
  #beating: Promise<void> | undefined;
  /** While heartbeats or settlements' releases fail: no try before these times (backoff). */
  #beatAt = 0;
  #settleAt = 0;
  readonly #beatRetry: RetryEpisode;
  readonly #settleRetry: RetryEpisode;

  constructor(options: RedisHoldBookOptions) {
    this.#redis = options.redis;
    this.#ledger = options.ledger;
    this.#logger = options.logger;
    this.#prefix = options.prefix ?? 'tg';
    this.#charge = options.charge;
    this.instanceId = `inst_${randomUUID()}`;
    this.#beatRetry = new RetryEpisode({
      loop: 'redis-hold-heartbeat',
      logger: this.#logger,
      policy: HEARTBEAT_BACKOFF,
      message: 'the hold heartbeat fails (lease, generation check, put-back, dead instances)',
      recovered: 'the hold heartbeat succeeds again',
    });
    this.#settleRetry = new RetryEpisode({
      loop: 'redis-hold-settle',
      logger: this.#logger,
      policy: SETTLE_BACKOFF,
      message: 'settled holds not released in Redis yet (the ledger has the charges; the holds cover them)',
      recovered: 'settled holds are released in Redis again',
    });
  }

  /** Counts the heartbeat's and releases' retries in the metric. */
  set retryReport(report: RetryReport) {
    this.#beatRetry.report = report;
    this.#settleRetry.report = report;
  }

  #keys(accountId: string): string[] {
    const base = `${this.#prefix}:hold:{${accountId}}`;
    return [`${base}:bal`, `${base}:holds`, `${base}:kspent`, `${base}:kheld`];
  }
  get #instances(): string {
    return `${this.#prefix}:hold:instances`;
  }
  #accountsOf(instanceId: string): string {
    return `${this.#prefix}:hold:inst:{${instanceId}}:accounts`;
  }

  async hold(
    requestId: string,
    accountId: string,
    amountMicros: number,
    now: number,
    expiresAt: number,
    key?: KeyBudget,
  ): Promise<boolean> {
    try {
      return await this.#hold(requestId, accountId, amountMicros, now, expiresAt, key);
    } catch (error) {
      // The ledger's outage is the database's 503, though its message may name the same socket errors.
      if (error instanceof GatewayError || error instanceof StoreUnavailableError || !isRedisFailure(error))
        throw error;
      throw new GatewayError(
        'service_unavailable',
        'credit cannot be reserved right now (the hold store is unreachable); retry shortly',
        { cause: error, retryAfterMs: 1_000 },
      );
    }
  }

  async #hold(
    requestId: string,
    accountId: string,
    amountMicros: number,
    now: number,
    expiresAt: number,
    key: KeyBudget | undefined,
  ): Promise<boolean> {
    if (!this.#indexed.has(accountId)) {
      await this.#redis.sadd(this.#accountsOf(this.instanceId), accountId);
      this.#indexed.add(accountId);
    }
    const keyId = key?.keyId ?? '';
    const entry = JSON.stringify({ a: amountMicros, i: this.instanceId, k: keyId, e: expiresAt });
    let reread = false;
    for (let attempt = 0; attempt < 4; attempt++) {
      // Redis was found empty (here or by a heartbeat): every instance puts its holds back before any is taken.
      const wait = this.#fenceUntil - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const [code, keyHeld] = (await holdScript.run(this.#redis, this.#keys(accountId), [
        requestId,
        amountMicros,
        entry,
        keyId,
        key?.limitMicros ?? -1,
        key?.fromDay ?? '',
        now,
        // A balance seeded after a restart this instance has not noticed yet is refused (-1): it checks the
        // generation (putting its own holds back, learning the fence) before it holds against it.
        this.#generation ?? '',
      ])) as [number, number];
      if (code === 1) {
        this.#mine.set(requestId, { accountId, amountMicros, keyId, entry });
        return true;
      }
      if (code === -2) {
        this.#keyHeld.set(keyId, keyHeld);
        return false;
      }
      if (code === 0) {
        // Short: a top-up may not be in Redis yet. Read the ledger again, at most once a second per account.
        const last = this.#shortReadAt.get(accountId) ?? 0;
        if (reread || Date.now() - last < SHORT_REREAD_MS) return false;
        this.#shortReadAt.set(accountId, Date.now());
        if (this.#shortReadAt.size > 50_000) this.#shortReadAt.clear();
      }
      reread = true;
      const seedKey = `${accountId}\u0000${key?.limitMicros === null ? '' : (key?.keyId ?? '')}`;
      let seeding = this.#seeding.get(seedKey);
      if (!seeding) {
        seeding = this.#seed(accountId, now, key).finally(() => this.#seeding.delete(seedKey));
        this.#seeding.set(seedKey, seeding);
      }
      const known = await seeding;
      if (!known) return false;
    }
    return false;
  }

  /** Reads the account's balance (and the key's spend) from the ledger into Redis; false for no such account. */
  async #seed(accountId: string, now: number, key: KeyBudget | undefined): Promise<boolean> {
    await this.#checkGeneration();
    for (let attempt = 0; attempt < 5; attempt++) {
      const read = await this.#ledger.versionedBalance(
        accountId,
        now,
        key && key.limitMicros !== null ? key : undefined,
      );
      if (!read) return false;
      const written = await seedScript.run(
        this.#redis,
        this.#keys(accountId).filter((_, i) => i % 2 === 0),
        [
          read.version,
          read.availableMicros,
          read.until,
          key && key.limitMicros !== null ? key.keyId : '',
          key?.fromDay ?? '',
          read.keySpentMicros,
          this.#generation ?? '',
        ],
      );
      if (written === 1) return true;
      // Redis already has a newer version than this read: a settlement committed meanwhile.
    }
    return true;
  }

  /** Journals a finished request on its hold, before its answer's last byte: a survivor charges it. */
  async finished(settlement: Settlement): Promise<void> {
    const mine = this.#mine.get(settlement.requestId);
    if (!mine) return;
    const journal = JSON.stringify(settlement);
    const written = await finishScript
      .run(this.#redis, this.#keys(settlement.accountId), [
        settlement.requestId,
        journal,
        settlement.costMicros,
      ])
      .catch((error: unknown) => {
        this.#logger.debug({ err: error }, 'could not journal a finished request on its hold');
        return 0;
      });
    if (written !== 1) return;
    // A put-back after Redis restarts empty carries what the journal wrote (the settlement, the hold lowered to
    // the cost), so a survivor still charges the request and the lowered hold stays lowered. The same object is
    // changed in place: a put-back under way tells a settled request by the object leaving #mine.
    const hold = JSON.parse(mine.entry) as { a: number; s?: string };
    hold.s = journal;
    if (settlement.costMicros >= 0 && settlement.costMicros < hold.a) hold.a = settlement.costMicros;
    mine.entry = JSON.stringify(hold);
    mine.amountMicros = hold.a;
  }

  settled(): void {
    // Holds are released by `committed`, which knows what each account was charged.
  }

  /** A batch committed to the ledger: release its holds and apply its charges to the balances Redis knows. */
  committed(batch: readonly Settlement[], charged: SettledAccounts): void {
    const byAccount = new Map<string, string[]>();
    for (const settlement of batch) {
      this.#mine.delete(settlement.requestId);
      const ids = byAccount.get(settlement.accountId);
      if (ids) ids.push(settlement.requestId);
      else byAccount.set(settlement.accountId, [settlement.requestId]);
    }
    for (const [accountId, requestIds] of byAccount)
      void this.#applySettle({ accountId, requestIds, charged: charged.get(accountId) });
  }

  /** Applies one account's settled batch in Redis; on failure keeps it for a later try (backoff). */
  async #applySettle(pending: PendingSettle): Promise<'done' | 'outage' | 'failed'> {
    const { charged } = pending;
    try {
      await settleScript.run(this.#redis, this.#keys(pending.accountId), [
        charged?.version ?? -1,
        charged?.chargedMicros ?? 0,
        charged?.replayed ? 1 : 0,
        charged?.keys.length ?? 0,
        ...(charged?.keys.flatMap((k) => [k.keyId, k.day, k.micros]) ?? []),
        ...pending.requestIds,
      ]);
    } catch (error) {
      // The ledger has the charge; Redis still holds the requests' credit (which covers it) until this is
      // applied on a later heartbeat, after a backoff: an error Redis gives every time must not be a storm.
      this.#unapplied.push(pending);
      const delay = this.#settleRetry.failed(error, isOutage(error), { pending: this.#unapplied.length });
      this.#settleAt = Math.max(this.#settleAt, Date.now() + delay);
      return isOutage(error) ? 'outage' : 'failed';
    }
    this.#settleRetry.succeeded();
    // Redis takes releases again: those still waiting need not sit out the backoff of an earlier failure.
    this.#settleAt = 0;
    return 'done';
  }

  /**
   * Tries the releases that failed, once each, oldest first; stops at the first that fails while Redis is
   * away, or at the tenth Redis refuses (the rest would most likely fail the same way: a round costs a few
   * calls, not one per waiting batch). Whatever fails or is not tried waits for the next round.
   */
  async #retryUnapplied(): Promise<void> {
    const unapplied = this.#unapplied;
    this.#unapplied = [];
    let refused = 0;
    for (let i = 0; i < unapplied.length; i++) {
      const outcome = await this.#applySettle(unapplied[i]!);
      if (outcome === 'failed') refused++;
      if (outcome === 'outage' || refused >= 10) {
        this.#unapplied.push(...unapplied.slice(i + 1));
        return;
      }
    }
  }

  /** Another writer moved the account's ledger to `version`: a balance Redis read before it is read again. */
  async forget(accountId: string, version: number): Promise<void> {
    await settleScript.run(this.#redis, this.#keys(accountId), [version, 0, 1, 0]);
  }

  /** The instances whose Redis lease is live at `now` (writers from before the version contract among them). */
  async liveInstances(now: number): Promise<string[]> {
    return this.#redis.zrangebyscore(this.#instances, now, '+inf');
  }

  /** What the live holds of every instance reserve for the account (the `held` sum the hold script keeps). */
  async heldMicros(accountId: string): Promise<number> {
    return Number((await this.#redis.hget(this.#keys(accountId)[0]!, 'held')) ?? 0);
  }

  keyHeldMicros(keyId: string): number {
    return this.#keyHeld.get(keyId) ?? 0;
  }

  /** What the key's live holds on every instance reserve now (the `kheld` sum the hold script keeps). */
  async keyHeldNow(accountId: string, keyId: string): Promise<number> {
    return Number((await this.#redis.hget(this.#keys(accountId)[3]!, keyId)) ?? 0);
  }

  /**
   * Whether a hold is taken now without waiting: the generation is known (a new one's fence has passed) and
   * the scripts are loaded. Start-up waits for this before the instance says it is ready.
   */
  ready(): boolean {
    return (
      this.#generation !== undefined && this.#scriptsIn === this.#generation && Date.now() >= this.#fenceUntil
    );
  }

  async #loadScripts(): Promise<void> {
    const generation = this.#generation;
    if (generation === undefined || this.#scriptsIn === generation) return;
    await Promise.all(SCRIPTS.map((script) => script.load(this.#redis)));
    this.#scriptsIn = generation;
  }

  /** Starts the heartbeat: the lease, the generation check, retries, and releasing dead instances' holds. */
  async start(charge?: (settlement: Settlement) => void): Promise<void> {
    this.#charge ??= charge;
    await this.#beat().catch((error: unknown) =>
      this.#logger.warn({ err: error }, 'the hold store is not reachable yet'),
    );
    this.#timer = setInterval(() => {
      if (Date.now() >= this.#beatAt) this.beatNow();
    }, REDIS_HEARTBEAT_MS);
    this.#timer.unref();
  }

  /**
   * A heartbeat now, unless one is under way (Redis just answered again: the lease, the generation check and
   * the waiting releases need not wait for the next tick or the backoff). A failed one backs off.
   */
  beatNow(): void {
    if (!this.#timer) return;
    this.#beating ??= this.#beat()
      .then(
        () => this.#beatRetry.succeeded(),
        (error: unknown) => {
          this.#beatAt = Date.now() + this.#beatRetry.failed(error, isOutage(error));
        },
      )
      .finally(() => (this.#beating = undefined));
  }

  async #beat(): Promise<void> {
    await this.#redis.zadd(this.#instances, Date.now() + REDIS_LEASE_MS, this.instanceId);
    this.#beatAt = 0;
    await this.#checkGeneration();
    await this.#loadScripts();
    if (this.#unapplied.length > 0 && Date.now() >= this.#settleAt) await this.#retryUnapplied();
    await this.releaseDeadInstances(Date.now());
  }

  /**
   * Redis restarted empty (or failed over to a replica without the holds): the generation key is gone or new.
   * Every live instance puts its running requests' holds back, and no hold is taken before the fence passes.
   */
  async #checkGeneration(): Promise<void> {
    const key = `${this.#prefix}:hold:generation`;
    const fence = `${this.#prefix}:hold:fence`;
    const candidate = randomUUID();
    const created = await this.#redis.set(key, candidate, 'NX');
    if (created === 'OK') await this.#redis.set(fence, '1', 'PX', REASSERT_FENCE_MS);
    const generation = created === 'OK' ? candidate : await this.#redis.get(key);
    const fenceLeft = await this.#redis.pttl(fence);
    if (fenceLeft > 0) this.#fenceUntil = Math.max(this.#fenceUntil, Date.now() + fenceLeft);
    if (generation === this.#generation) return;
    const first = this.#generation === undefined;
    this.#indexed.clear();
    // The new generation is taken only once this instance's holds are back: until then its holds are refused
    // by balances seeded in it, so none is taken before those it already granted are counted again.
    if (!first || this.#mine.size > 0) await this.#reassert();
    this.#generation = generation ?? undefined;
  }

  async #reassert(): Promise<void> {
    this.#logger.warn(
      { holds: this.#mine.size },
      'Redis lost the credit holds (restarted empty or failed over): putting back this instance’s',
    );
    await this.#redis.zadd(this.#instances, Date.now() + REDIS_LEASE_MS, this.instanceId);
    for (const [requestId, hold] of this.#mine) {
      if (!this.#indexed.has(hold.accountId)) {
        await this.#redis.sadd(this.#accountsOf(this.instanceId), hold.accountId);
        this.#indexed.add(hold.accountId);
      }
      const added = await reassertScript.run(this.#redis, this.#keys(hold.accountId), [
        requestId,
        hold.entry,
        hold.amountMicros,
        hold.keyId,
      ]);
      // Its settlement committed meanwhile, and its release may have reached Redis first (a script Redis has
      // not loaded since the restart is sent twice): take the hold out again, or it would never leave. Its
      // charge reached Redis with that release; this one charges nothing, and is retried on a heartbeat if it
      // fails (a later put-back would find the hold there and not release it again).
      if (added === 1 && this.#mine.get(requestId) !== hold)
        await this.#applySettle({ accountId: hold.accountId, requestIds: [requestId], charged: undefined });
    }
  }

  /**
   * Releases the holds of instances whose lease ran out (they died): nothing is charged for requests that
   * never finished; finished ones (journaled) are charged through this instance. Returns how many instances.
   */
  async releaseDeadInstances(now: number): Promise<number> {
    const dead = await this.#redis.zrangebyscore(this.#instances, '-inf', now, 'LIMIT', 0, 20);
    for (const instanceId of dead) {
      if (instanceId === this.instanceId) continue;
      const finished = await this.#releaseInstance(instanceId, this.#charge ? this.instanceId : '');
      for (const json of finished) this.#charge?.(JSON.parse(json) as Settlement);
      await this.#redis.zrem(this.#instances, instanceId);
      if (finished.length > 0)
        this.#logger.warn(
          { instance: instanceId, charged: finished.length },
          'charged requests a stopped instance answered but did not settle',
        );
    }
    return dead.length;
  }

  async #releaseInstance(instanceId: string, newOwner: string): Promise<string[]> {
    const accounts = await this.#redis.smembers(this.#accountsOf(instanceId));
    const finished: string[] = [];
    for (const accountId of accounts) {
      const found = (await releaseInstanceScript.run(this.#redis, this.#keys(accountId), [
        instanceId,
        newOwner,
      ])) as string[];
      finished.push(...found);
    }
    await this.#redis.del(this.#accountsOf(instanceId));
    return finished;
  }

  /** A clean stop, after every settlement committed: what this instance still holds is released now. */
  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#beating;
    try {
      // Once each: a release that fails again is left to this instance's lease, never retried in a loop.
      await this.#retryUnapplied();
      if (this.#unapplied.length > 0)
        throw new Error(`${this.#unapplied.length} settled batches not released`);
      await this.#releaseInstance(this.instanceId, '');
      await this.#redis.zrem(this.#instances, this.instanceId);
    } catch (error) {
      this.#logger.warn(
        { err: error },
        'could not release this instance’s holds; its lease runs out instead',
      );
    }
  }
}

/** Redis being away (refused, closed, timed out), as opposed to an error it answers with (a script's). */
function isOutage(error: unknown): boolean {
  return isRedisFailure(error) && (error as Error | undefined)?.name !== 'ReplyError';
}

/** An error of Redis itself (connection, timeout, reply), as opposed to the ledger's. */
function isRedisFailure(error: unknown): boolean {
  const name = (error as Error | undefined)?.name ?? '';
  const message = (error as Error | undefined)?.message ?? '';
  return (
    name === 'ReplyError' ||
    name === 'MaxRetriesPerRequestError' ||
    /Connection is closed|Stream isn't writeable|enableOfflineQueue|Command timed out|ECONNREFUSED|ECONNRESET|ClusterAllFailedError|Failed to refresh slots/i.test(
      message,
    )
  );
}
