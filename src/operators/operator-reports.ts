import type { DeploymentStats, Router } from '../routing/router.ts';
import { GatewayError } from '../core/gateway-error.ts';
import type { Clock } from '../core/ids.ts';
import { DAY_MS, utcDay } from '../core/time.ts';
import type { DayTotals, ExportedUsage, FailingEndpoint } from '../store/admin-reports-repo.ts';
import type { Store } from '../store/store.ts';
import type { WebhooksService } from '../webhooks/webhooks-service.ts';

export type { ExportedUsage };

/** Usage records read per page of the export: memory stays one page however long the range. */
const EXPORT_PAGE = 1_000;

export interface OperatorReportsOptions {
  store: Store;
  clock: Clock;
  router: Router;
  webhooks: Pick<WebhooksService, 'redeliver'>;
}

/** One UTC day of the daily statistics; a day with no usage or orders has zeros. */
export interface DailyRow extends DayTotals {
  revenueMicros: number;
  newAccounts: number;
}

/** The daily statistics: every day of the range, then per day and plan, per day and model. */
export interface DailyStats {
  days: DailyRow[];
  byPlan: (DayTotals & { key: string })[];
  byModel: (DayTotals & { key: string })[];
}

/** The webhook backlog and the endpoints failing most. */
export interface WebhookReport {
  backlog: { pending: number; failing: number; oldestPendingAt: number | null };
  failing: FailingEndpoint[];
}

/** The operators' reports: statistics over time, deployments' health, the webhook backlog, the usage export. */
export class OperatorReports {
  readonly #o: OperatorReportsOptions;

  constructor(options: OperatorReportsOptions) {
    this.#o = options;
  }

  /** The last `days` UTC days, today included, oldest first. */
  async daily(days: number): Promise<DailyStats> {
    const reports = this.#o.store.adminReports;
    const now = this.#o.clock();
    const fromMs = Math.floor(now / DAY_MS - days + 1) * DAY_MS;
    const [from, to] = [utcDay(fromMs), utcDay(now)];
    const totals = new Map((await reports.dailyTotals(from, to)).map((row) => [row.day, row]));
    const money = await reports.revenueAndSignups(fromMs);
    const rows = Array.from({ length: days }, (_, i) => {
      const day = utcDay(fromMs + i * DAY_MS);
      const row = totals.get(day);
      return {
        day,
        requests: row?.requests ?? 0,
        tokens: row?.tokens ?? 0,
        spendMicros: row?.spendMicros ?? 0,
        revenueMicros: money.get(day)?.revenueMicros ?? 0,
        newAccounts: money.get(day)?.newAccounts ?? 0,
      };
    });
    const byPlan = await reports.dailyBy('plan', from, to);
    const byModel = await reports.dailyBy('model', from, to);
    return { days: rows, byPlan, byModel };
  }

  /** From the router's in-process measurements only: calls no upstream. */
  deployments(): DeploymentStats[] {
    return this.#o.router.stats();
  }

  /** The backlog and up to 100 failing endpoints. */
  async webhooks(): Promise<WebhookReport> {
    const reports = this.#o.store.adminReports;
    const backlog = await reports.webhookBacklog();
    const failing = await reports.failingEndpoints(100);
    return { backlog, failing };
  }

  /** Queues the delivery's event again, whichever account it belongs to (404 for no such delivery). */
  async redeliver(deliveryId: string): Promise<{ accountId: string; eventId: string }> {
    const accountId = await this.#o.store.adminReports.deliveryAccount(deliveryId);
    if (!accountId) throw new GatewayError('not_found', `no delivery ${deliveryId}`);
    const eventId = await this.#o.webhooks.redeliver(accountId, deliveryId);
    return { accountId, eventId };
  }

  /**
   * The usage records created in [from, to), oldest first, one page at a time: the next page is read only
   * when the consumer asks for it.
   */
  async *usagePages(range: {
    from: number;
    to: number;
    accountId?: string;
  }): AsyncGenerator<ExportedUsage[]> {
    const reports = this.#o.store.adminReports;
    let after: { createdAt: number; requestId: string } | undefined;
    for (;;) {
      const rows = await reports.usagePage(range, after, EXPORT_PAGE);
      if (rows.length === 0) return;
      yield rows;
      const last = rows[rows.length - 1]!;
      after = { createdAt: last.createdAt, requestId: last.requestId };
      if (rows.length < EXPORT_PAGE) return;
    }
  }
}
