import type { SettlementQueue } from '../billing/settlement-queue.ts';
import type { Limiter } from '../core/rate-limits.ts';
import type { Router } from '../routing/router.ts';
import type { Clock } from '../core/ids.ts';
import type { Store } from '../store/store.ts';
import { RELEASE_VERSION } from '../fleet/release.ts';

export const VERSION = RELEASE_VERSION;

export interface HealthReport {
  status: 'ok' | 'degraded' | 'down';
  version: string;
  uptime_s: number;
  database: { ok: boolean; dialect: string; latency_ms: number | null; error?: string };
  [part: string]: unknown;
}

export interface HealthParts {
  store: Store;
  limiter: Limiter;
  settlements: SettlementQueue;
  router: Router;
  clock: Clock;
  /** When this process started (clock time). */
  startedAt: number;
}

/**
 * The health check: down without the database, degraded without the shared limiter, with the parts' details
 * (the operator's: `/health` shows others the status only).
 */
export function createHealthCheck(parts: HealthParts): () => Promise<HealthReport> {
  const { store, limiter, settlements, router, clock, startedAt } = parts;
  return async () => {
    let database: HealthReport['database'];
    try {
      database = { ok: true, dialect: store.db.dialect, latency_ms: round(await store.db.ping()) };
    } catch (error) {
      database = {
        ok: false,
        dialect: store.db.dialect,
        latency_ms: null,
        error: (error as Error).message,
      };
    }
    return {
      status: database.ok ? (limiter.healthy() ? 'ok' : 'degraded') : 'down',
      version: VERSION,
      uptime_s: Math.round((clock() - startedAt) / 1000),
      database,
      limiter: { backend: limiter.backend, ok: limiter.healthy() },
      settlements_pending: settlements.pending,
      deployments: router.health(),
    };
  };
}

const round = (ms: number): number => Math.round(ms * 1000) / 1000;
