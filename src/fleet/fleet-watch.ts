import type { Logger } from 'pino';
import type { Clock } from '../core/ids.ts';
import type { FleetRepo } from '../store/fleet-repo.ts';
import { SCHEMA_VERSION } from '../store/migrate.ts';
import { OLDEST_PEER_RELEASE, RELEASE_VERSION } from './release.ts';
import { type FleetVerdict, judgeFleet } from './version-contract.ts';

/** How often an instance renews its versioned lease and reads the others', and how long a lease lasts. */
export const FLEET_HEARTBEAT_MS = 5_000;
export const FLEET_LEASE_MS = 30_000;
/** How often an instance notes that a contract release is alive (what start-up compares later writes with). */
export const SEEN_EVERY_MS = 60_000;

export interface FleetWatchOptions {
  fleet: FleetRepo;
  instanceId: string;
  /** The stored formats and rules this instance reads and enforces (its lease lists them). */
  reads: readonly string[];
  logger: Logger;
  clock: Clock;
  /** Only this process uses the database: other leases are left by processes that died. */
  singleProcess: boolean;
  /** The operator forced this release to run beside newer ones (TOLLGATE_FORCE_VERSION). */
  force: boolean;
  /** Live writers seen where they hold credit (Redis), whether or not they have a lease. */
  liveWriters?: (now: number) => Promise<readonly string[]>;
  heartbeatMs?: number;
  /** This release (tests run an older one); by default RELEASE_VERSION and OLDEST_PEER_RELEASE. */
  release?: string;
  oldestPeer?: string;
}

/** A readiness condition: its name, whether it holds, and why not. */
export interface ReadinessCondition {
  name: string;
  ok: boolean;
  detail?: string;
}

/**
 * The version contract at run time: renews this instance's lease with its release, schema and what it reads;
 * reads the other leases; keeps this instance unready while an older one it cannot run beside is alive; asks
 * it to drain and stop when a newer one (or the schema) needs a newer release; opens stored-format gates once
 * every live instance reads the format. Warns once per instance of a release from before the contract.
 */
export class FleetWatch {
  readonly instanceId: string;
  readonly #options: FleetWatchOptions;
  readonly #release: string;
  readonly #oldestPeer: string;
  #verdict: FleetVerdict | undefined;
  #timer: NodeJS.Timeout | undefined;
  #beating: Promise<void> | undefined;
  #stopAsked = false;
  #failing = false;
  #closed = false;
  readonly #warnedPreContract = new Set<string>();
  #lastBlockers = '';
  #seenAt = -Infinity;
  readonly #mustStop: ((reason: string) => void)[] = [];
  readonly #readable: { name: string; fn: () => void; fired: boolean }[] = [];

  constructor(options: FleetWatchOptions) {
    this.#options = options;
    this.instanceId = options.instanceId;
    this.#release = options.release ?? RELEASE_VERSION;
    this.#oldestPeer = options.oldestPeer ?? OLDEST_PEER_RELEASE;
  }

  /** Called once when this instance must drain and stop (never when forced). */
  onMustStop(fn: (reason: string) => void): void {
    this.#mustStop.push(fn);
  }

  /**
   * Calls `fn` when every live instance reads `name` (at once if that is already known), and again each time
   * that becomes true after it was not (an instance that cannot read it came and went).
   */
  whenReadByAll(name: string, fn: () => void): void {
    this.#readable.push({ name, fn, fired: false });
    this.#fireReadable();
  }

  /** Whether every other live instance reads `name`: false until the first look at the fleet. */
  readByAll(name: string): boolean {
    return this.#verdict?.readByAll(name) ?? false;
  }

  /** The readiness condition `GET /health/ready` reports. */
  readiness(): ReadinessCondition {
    const verdict = this.#verdict;
    if (!verdict)
      return { name: 'version_contract', ok: false, detail: 'the other instances are not read yet' };
    if (verdict.mustStop && !this.#options.force)
      return { name: 'version_contract', ok: false, detail: `stopping: ${verdict.mustStop}` };
    if (verdict.blockers.length > 0)
      return { name: 'version_contract', ok: false, detail: verdict.blockers.join('; ') };
    return { name: 'version_contract', ok: true };
  }

  async start(): Promise<void> {
    await this.beat();
    const every = this.#options.heartbeatMs ?? FLEET_HEARTBEAT_MS;
    this.#timer = setInterval(() => {
      this.#beating ??= this.beat().finally(() => (this.#beating = undefined));
    }, every);
    this.#timer.unref();
  }

  /** One round: renew, read, judge, act. Failures are logged once per episode, and tried again next round. */
  async beat(): Promise<void> {
    if (this.#closed) return;
    const { fleet, clock, logger } = this.#options;
    const now = clock();
    try {
      await fleet.renew({
        instanceId: this.instanceId,
        heartbeatAt: now,
        expiresAt: now + FLEET_LEASE_MS,
        release: this.#release,
        schema: SCHEMA_VERSION,
        oldestPeer: this.#oldestPeer,
        reads: [...this.#options.reads],
      });
      if (now - this.#seenAt >= SEEN_EVERY_MS) {
        await fleet.markSeen(now);
        this.#seenAt = now;
      }
      const peers = this.#options.singleProcess ? [] : await fleet.live(now);
      const leased = new Set(peers.map((peer) => peer.instanceId));
      const writers = this.#options.singleProcess ? [] : ((await this.#options.liveWriters?.(now)) ?? []);
      const unleased = writers.filter((id) => id !== this.instanceId && !leased.has(id));
      this.#judge(judgeFleet(this.#self(), peers, unleased, await fleet.oldestRelease()));
      if (this.#failing) logger.info('the version contract reads the other instances again');
      this.#failing = false;
    } catch (error) {
      if (!this.#failing)
        logger.warn({ err: error }, 'the version contract could not read the other instances');
      this.#failing = true;
    }
  }

  #self() {
    return { instanceId: this.instanceId, release: this.#release, oldestPeer: this.#oldestPeer };
  }

  #judge(verdict: FleetVerdict): void {
    const { logger, force } = this.#options;
    this.#verdict = verdict;
    for (const id of verdict.preContract) {
      if (this.#warnedPreContract.has(id)) continue;
      this.#warnedPreContract.add(id);
      logger.warn(
        { instance: id },
        `an instance of a release from before the version contract is running on this database: it is taken to be release 0.1.0 with migration 008; any older release must be stopped before this one serves (docs/operations.md, "Upgrades")`,
      );
    }
    const blockers = verdict.blockers.join('; ');
    if (blockers !== this.#lastBlockers) {
      if (blockers)
        logger.warn(
          { reasons: verdict.blockers },
          'not ready: an instance this release cannot run beside is alive',
        );
      else if (this.#lastBlockers) logger.info('ready: no instance this release cannot run beside is alive');
      this.#lastBlockers = blockers;
    }
    if (verdict.mustStop && !this.#stopAsked) {
      this.#stopAsked = true;
      if (force) {
        logger.warn(
          { reason: verdict.mustStop },
          'a newer release needs this one to stop; it keeps running (forced by TOLLGATE_FORCE_VERSION)',
        );
      } else {
        logger.error(
          { reason: verdict.mustStop },
          'a newer release cannot run beside this one: draining and stopping',
        );
        for (const fn of this.#mustStop) fn(verdict.mustStop);
      }
    }
    this.#fireReadable();
  }

  #fireReadable(): void {
    for (const entry of this.#readable) {
      if (!this.readByAll(entry.name)) entry.fired = false;
      else if (!entry.fired) {
        entry.fired = true;
        entry.fn();
      }
    }
  }

  /** Stops the heartbeat and gives up the lease (a clean stop). */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    await this.#beating;
    const { fleet, clock } = this.#options;
    await fleet
      .markSeen(clock())
      .then(() => fleet.end(this.instanceId))
      .catch((error: unknown) =>
        this.#options.logger.warn(
          { err: error },
          'could not end this instance’s versioned lease; it runs out instead',
        ),
      );
  }
}
