import type { Config } from '../core/config.ts';
import { GatewayError } from '../core/gateway-error.ts';
import { type Clock, newId } from '../core/ids.ts';
import type { Announcement, Severity } from '../store/announcements-repo.ts';
import type { Store } from '../store/store.ts';
import { DAY_MS, utcDay } from '../core/time.ts';

/** The spec's notice period for a breaking change, in whole UTC days. */
export const BREAKING_NOTICE_DAYS = 90;

/** What an operator sends to post or change a notice (times in ms since the epoch). */
export interface AnnouncementInput {
  title?: string;
  body?: string;
  severity?: Severity;
  models?: string[];
  startsAt?: number;
  endsAt?: number | null;
  breaking?: boolean;
  effectiveAt?: number | null;
}

const utcDayNumber = (ms: number): number => Math.floor(ms / DAY_MS);

/**
 * Announcements: post, edit, end. A breaking change must take effect at least 90 UTC calendar days after
 * today, and marking one breaking queues one e-mail per verified account in the same transaction.
 */
export class AnnouncementsService {
  readonly #store: Store;
  readonly #config: Config;
  readonly #clock: Clock;
  readonly #mailQueued: () => void;

  constructor(options: { store: Store; config: Config; clock: Clock; mailQueued: () => void }) {
    this.#store = options.store;
    this.#config = options.config;
    this.#clock = options.clock;
    this.#mailQueued = options.mailQueued;
  }

  async list(limit = 200): Promise<Announcement[]> {
    return this.#store.announcements.recent(limit);
  }

  /** Posts a notice; `baseUrl` is the site's address, for the status link in the mails of a breaking change. */
  async create(input: AnnouncementInput, createdBy: string, baseUrl: string): Promise<Announcement> {
    const now = this.#clock();
    if (input.title === undefined || input.body === undefined)
      throw new GatewayError('invalid_request', 'body.title and body.body are required', {
        param: input.title === undefined ? 'title' : 'body',
      });
    const announcement = this.#checked(
      {
        id: newId('ann'),
        title: input.title,
        body: input.body,
        severity: input.severity ?? 'info',
        models: input.models ?? [],
        startsAt: input.startsAt ?? now,
        endsAt: input.endsAt ?? null,
        breaking: input.breaking ?? false,
        effectiveAt: input.effectiveAt ?? null,
        createdAt: now,
        updatedAt: now,
        createdBy,
      },
      undefined,
      now,
    );
    await this.#store.transaction(async (tx) => {
      await tx.announcements.insert(announcement);
      if (announcement.breaking) await this.#queueMail(tx, announcement, now, baseUrl);
    });
    if (announcement.breaking) this.#mailQueued();
    return announcement;
  }

  async update(id: string, input: AnnouncementInput, baseUrl: string): Promise<Announcement> {
    const now = this.#clock();
    const queued = await this.#store.transaction(async (tx) => {
      const was = await tx.announcements.byId(id);
      if (!was) throw new GatewayError('not_found', `no announcement ${id}`);
      const next = this.#checked(
        {
          ...was,
          ...definedOf(input),
          updatedAt: now,
        },
        was,
        now,
      );
      await tx.announcements.update(next);
      if (next.breaking && !was.breaking) await this.#queueMail(tx, next, now, baseUrl);
      return { next, mailed: next.breaking && !was.breaking };
    });
    if (queued.mailed) this.#mailQueued();
    return queued.next;
  }

  /** Ends the notice now (an ended one keeps its end). */
  async end(id: string): Promise<Announcement> {
    const was = await this.#store.announcements.byId(id);
    if (!was) throw new GatewayError('not_found', `no announcement ${id}`);
    const now = this.#clock();
    if (was.endsAt !== null && was.endsAt <= now) return was;
    const ended = { ...was, endsAt: now, updatedAt: now };
    await this.#store.announcements.update(ended);
    return ended;
  }

  /** The notice if it is valid; a breaking change is checked against today when it is new or moved. */
  #checked(next: Announcement, was: Announcement | undefined, now: number): Announcement {
    const known = this.#config.models;
    const unknown = next.models.find((model) => !known.has(model));
    if (unknown !== undefined)
      throw new GatewayError('invalid_request', `body.models: ${unknown} is not a public model`, {
        param: 'models',
      });
    if (next.endsAt !== null && next.endsAt <= next.startsAt)
      throw new GatewayError('invalid_request', 'body.ends_at must be after starts_at', { param: 'ends_at' });
    if (!next.breaking) return { ...next, effectiveAt: null };
    if (next.effectiveAt === null)
      throw new GatewayError('invalid_request', 'a breaking change needs body.effective_at', {
        param: 'effective_at',
      });
    const unchanged = was?.breaking === true && was.effectiveAt === next.effectiveAt;
    const noticeDays = utcDayNumber(next.effectiveAt) - utcDayNumber(now);
    if (!unchanged && noticeDays < BREAKING_NOTICE_DAYS)
      throw new GatewayError(
        'invalid_request',
        `a breaking change must be announced ${BREAKING_NOTICE_DAYS} days ahead: body.effective_at is ${noticeDays} days from today (UTC)`,
        { param: 'effective_at' },
      );
    return next;
  }

  async #queueMail(tx: Store, announcement: Announcement, now: number, baseUrl: string): Promise<void> {
    const effective = utcDay(announcement.effectiveAt ?? now);
    const models = announcement.models.length > 0 ? announcement.models.join(', ') : 'all models';
    const statusUrl = `${baseUrl}/status`;
    await tx.mailQueue.enqueueToVerified(
      `announcement:${announcement.id}`,
      `Breaking change to Tollgate on ${effective}: ${announcement.title}`,
      `${announcement.title}\n\nTakes effect on ${effective} (UTC) for ${models}.\n\n${announcement.body}\n\nStatus and upcoming changes: ${statusUrl}\n`,
      now,
    );
  }
}

/** The fields the input sets (undefined leaves the stored value). */
function definedOf(input: AnnouncementInput): Partial<Announcement> {
  return Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined));
}
