import type { Config } from '../core/config.ts';
import { GatewayError } from '../core/gateway-error.ts';
import type { Clock } from '../core/ids.ts';
import { DAY_MS, utcDay } from '../core/time.ts';
import type { Store } from '../store/store.ts';
import { addKindCounts, type KindCounts, NO_KIND_COUNTS } from '../store/token-counts.ts';
import type { DayModelRow, RecentRequest, StatsCounts, UsageGroup, UsageRow } from '../store/usage-repo.ts';

/** The range a usage query covers when it names no start: 30 UTC days up to its end. */
const DEFAULT_RANGE_DAYS = 30;

/** An account's usage over UTC days `from`..`to` (YYYY-MM-DD), grouped, with the total of every group. */
export interface UsageSummary {
  from: string;
  to: string;
  groupBy: UsageGroup;
  rows: UsageRow[];
  total: {
    requests: number;
    promptTokens: number;
    completionTokens: number;
    costMicros: number;
  } & KindCounts;
}

/** The account's usage (the daily rollup and its latest requests) and the operator's statistics. */
export class UsageService {
  readonly #o: { store: Store; config: Config; clock: Clock };

  constructor(options: { store: Store; config: Config; clock: Clock }) {
    this.#o = options;
  }

  /**
   * Usage from the daily rollup, by day, model or key; `to` defaults to today and `from` to 29 days before
   * `to`. Dates that are not dates, or a range that ends before it starts, are a 400.
   */
  async summary(
    accountId: string,
    query: { from?: string | undefined; to?: string | undefined; groupBy?: UsageGroup | undefined },
  ): Promise<UsageSummary> {
    const to = query.to ?? utcDay(this.#o.clock());
    const from = query.from ?? utcDay(Date.parse(`${to}T00:00:00Z`) - (DEFAULT_RANGE_DAYS - 1) * DAY_MS);
    if (Number.isNaN(Date.parse(`${from}T00:00:00Z`)) || Number.isNaN(Date.parse(`${to}T00:00:00Z`))) {
      throw new GatewayError('invalid_request', 'from and to must be dates as YYYY-MM-DD');
    }
    if (from > to) throw new GatewayError('invalid_request', 'from must not be after to');
    const groupBy = query.groupBy ?? 'day';
    const rows = await this.#o.store.usage.summary(accountId, from, to, groupBy);
    const total = rows.reduce(
      (sum, row) => ({
        requests: sum.requests + row.requests,
        promptTokens: sum.promptTokens + row.promptTokens,
        completionTokens: sum.completionTokens + row.completionTokens,
        costMicros: sum.costMicros + row.costMicros,
        ...addKindCounts(sum, row),
      }),
      { requests: 0, promptTokens: 0, completionTokens: 0, costMicros: 0, ...NO_KIND_COUNTS },
    );
    return { from, to, groupBy, rows, total };
  }

  /** The account's latest requests, newest first (counts, never content). */
  async recent(accountId: string, limit: number): Promise<RecentRequest[]> {
    return this.#o.store.usage.recent(accountId, limit);
  }

  /** The last 30 UTC days (today included) by day and model, for the overview's chart. */
  async dailyByModel(accountId: string): Promise<{ from: string; to: string; rows: DayModelRow[] }> {
    const now = this.#o.clock();
    const to = utcDay(now);
    const from = utcDay(now - (DEFAULT_RANGE_DAYS - 1) * DAY_MS);
    return { from, to, rows: await this.#o.store.usage.dailyByModel(accountId, from, to) };
  }

  /** The spec's segmented statistics; paid users are those on a priced plan or Enterprise. */
  async segmentedStats(): Promise<StatsCounts> {
    const { store, config, clock } = this.#o;
    const paidPlans = [...config.plans.values()]
      .filter((plan) => plan.monthlyPriceMicros > 0 || plan.id === 'enterprise')
      .map((plan) => plan.id);
    return store.usage.stats(clock(), paidPlans);
  }
}
