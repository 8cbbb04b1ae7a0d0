import type { Logger } from 'pino';
import type { Job } from '../jobs/scheduler.ts';
import type { Router } from '../routing/router.ts';
import type { Clock } from '../core/ids.ts';
import type { Announcement } from '../store/announcements-repo.ts';
import type { ModelState } from '../store/health-samples-repo.ts';
import type { Store } from '../store/store.ts';
import { deriveModelStates } from './model-state.ts';
import { DAY_MS, MINUTE_MS, utcDay } from '../core/time.ts';

/** Health samples are kept, and availability shown, for this many days. */
export const HEALTH_HISTORY_DAYS = 90;

/** What `/status`, `/status.json` and the Atom feed show, built at `updatedAt`. */
export interface StatusDocument {
  updatedAt: number;
  models: {
    id: string;
    state: ModelState;
    /** Oldest first, one per UTC day; null on a day with no sample. */
    availability: { day: string; availability: number | null }[];
    uptime: number | null;
  }[];
  /** Current notices of major or critical severity. */
  incidents: Announcement[];
  /** Other current notices. */
  announcements: Announcement[];
  /** Breaking changes not yet in effect, soonest first. */
  breakingChanges: Announcement[];
  /** The newest notices, for the feed. */
  feed: Announcement[];
}

export interface StatusSnapshotOptions {
  store: Store;
  router: Router;
  clock: Clock;
  logger: Logger;
  models: Iterable<string>;
  /** How long a snapshot is served before the next visit rebuilds it (announcements, states). */
  refreshMs?: number;
  /** How long the 90-day availability (the one heavy read) is reused. */
  historyRefreshMs?: number;
}

const isCurrent = (a: Announcement, now: number): boolean =>
  a.startsAt <= now && (a.endsAt === null || a.endsAt > now);

/**
 * The public status, served from memory: a visit within `refreshMs` of the last build reads nothing; the
 * next one rebuilds it once however many visits arrive together, and a failed rebuild serves the last one.
 */
export class StatusSnapshot {
  readonly #o: Required<StatusSnapshotOptions>;
  readonly #models: string[];
  #current: StatusDocument | undefined;
  #building: Promise<StatusDocument> | undefined;
  #history: { at: number; days: Map<string, { samples: number; available: number }> } | undefined;
  /** How many times the snapshot was built from the store (tests read it). */
  builds = 0;

  constructor(options: StatusSnapshotOptions) {
    this.#o = { refreshMs: 5_000, historyRefreshMs: 5 * MINUTE_MS, ...options };
    this.#models = [...options.models];
  }

  async get(): Promise<StatusDocument> {
    const current = this.#current;
    if (current && this.#o.clock() - current.updatedAt < this.#o.refreshMs) return current;
    this.#building ??= this.#build()
      .catch((error: unknown) => {
        if (!current) throw error;
        this.#o.logger.warn({ err: error }, 'status snapshot not rebuilt; serving the last one');
        return current;
      })
      .finally(() => (this.#building = undefined));
    return this.#building;
  }

  /** The models' states now, from each model's deployment circuits and counts (no latencies, no upstream). */
  states(): Map<string, ModelState> {
    const { router } = this.#o;
    return deriveModelStates(this.#models, (model) => router.modelHealth(model));
  }

  /** Records each model's state for this minute and deletes samples past 90 days: one instance a minute. */
  sampleJob(): Job {
    return {
      name: 'health-samples',
      everyMs: MINUTE_MS,
      run: async () => {
        const now = this.#o.clock();
        await this.#o.store.healthSamples.record(Math.floor(now / MINUTE_MS) * MINUTE_MS, this.states());
        await this.#o.store.healthSamples.deleteBefore(now - HEALTH_HISTORY_DAYS * DAY_MS);
      },
    };
  }

  async #build(): Promise<StatusDocument> {
    const { store, clock } = this.#o;
    const now = clock();
    this.builds += 1;
    const today = Math.floor(now / DAY_MS);
    const firstDay = today - HEALTH_HISTORY_DAYS + 1;
    if (!this.#history || now - this.#history.at >= this.#o.historyRefreshMs) {
      const rows = await store.healthSamples.availabilitySince(firstDay * DAY_MS);
      this.#history = {
        at: now,
        days: new Map(rows.map((row) => [`${row.model}\u0000${row.epochDay}`, row])),
      };
    }
    const history = this.#history.days;
    const recent = await store.announcements.recent(200);
    const states = this.states();
    const models = this.#models.map((id) => {
      let samples = 0;
      let available = 0;
      const availability = Array.from({ length: HEALTH_HISTORY_DAYS }, (_, i) => {
        const day = history.get(`${id}\u0000${firstDay + i}`);
        samples += day?.samples ?? 0;
        available += day?.available ?? 0;
        return {
          day: utcDay((firstDay + i) * DAY_MS),
          availability: day && day.samples > 0 ? round4(day.available / day.samples) : null,
        };
      });
      return {
        id,
        state: states.get(id) ?? 'operational',
        availability,
        uptime: samples > 0 ? round4(available / samples) : null,
      };
    });
    const current = recent.filter((a) => isCurrent(a, now));
    const serious = (a: Announcement): boolean => a.severity === 'major' || a.severity === 'critical';
    const document: StatusDocument = {
      updatedAt: now,
      models,
      incidents: current.filter((a) => !a.breaking && serious(a)),
      announcements: current.filter((a) => !a.breaking && !serious(a)),
      breakingChanges: recent
        .filter(
          (a) =>
            a.breaking &&
            a.effectiveAt !== null &&
            a.effectiveAt > now &&
            (a.endsAt === null || a.endsAt > now),
        )
        .sort((a, b) => (a.effectiveAt ?? 0) - (b.effectiveAt ?? 0)),
      feed: recent.slice(0, 50),
    };
    this.#current = document;
    return document;
  }
}

const round4 = (value: number): number => Math.round(value * 10_000) / 10_000;
