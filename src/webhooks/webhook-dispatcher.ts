import { Agent, request } from 'undici';
import type { Logger } from 'pino';
import type { Clock } from '../core/ids.ts';
import { newId } from '../core/ids.ts';
import type { WebhookEvent } from '../core/records.ts';
import type { Store } from '../store/store.ts';
import { DEFAULT_RETRY_DELAYS_MS, nextAttemptAt } from './retry-schedule.ts';
import { signPayload, signStandard } from './sign-payload.ts';
import { createGuardedLookup, isAllowedPort, isPublicAddress, type Resolve } from './url-guard.ts';
import { isIP } from 'node:net';
import { StoreUnavailableError } from '../store/db.ts';
import { RetryEpisode, type RetryReport } from '../shared/retry-episode.ts';

export interface DispatcherOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  allowPrivate: boolean;
  /** Ports an endpoint may use; an endpoint saved before a narrower setting is not contacted. */
  ports?: readonly number[] | 'any';
  /** A receiver must answer 2xx within this; otherwise the attempt failed. */
  timeoutMs?: number;
  retryDelaysMs?: readonly number[];
  /** How often the outbox is read for attempts that have come due (a queued event nudges it at once). */
  pollMs?: number;
  /** How host names are resolved (DNS by default); every address is checked at each connection. */
  resolve?: Resolve;
}

/** An attempt cannot outlast its timeout; past this margin a lease is another instance's to take. */
const LEASE_MARGIN_MS = 10_000;
const BATCH = 20;

/**
 * Delivers the outbox: at least once, leased so that several instances never make the same attempt twice,
 * retried on a ~24 h schedule, and durable (a queued event outlives any restart).
 */
export class WebhookDispatcher {
  readonly #o: Required<Omit<DispatcherOptions, 'resolve'>>;
  readonly #agent: Agent;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  /** While rounds fail (the outbox cannot be read): polls are skipped until this time. */
  #notBefore = 0;
  #retry: RetryEpisode;

  constructor(options: DispatcherOptions) {
    this.#o = {
      timeoutMs: 10_000,
      retryDelaysMs: DEFAULT_RETRY_DELAYS_MS,
      pollMs: 1_000,
      ports: 'any',
      ...options,
    };
    if (options.allowPrivate)
      options.logger.warn(
        { webhookAllowPrivate: true },
        'WEBHOOKS MAY REACH PRIVATE ADDRESSES (TOLLGATE_WEBHOOK_ALLOW_PRIVATE=true): any account can make this server POST to loopback, private networks and cloud metadata, over plain http and any port; never set it where accounts are not all trusted (docs/security.md)',
      );
    this.#agent = new Agent({
      connect: {
        lookup: createGuardedLookup(options.allowPrivate, options.resolve),
        timeout: this.#o.timeoutMs,
      },
      keepAliveTimeout: 10_000,
    });
    this.#retry = new RetryEpisode({
      loop: 'webhook-outbox',
      logger: options.logger,
      policy: { initialMs: this.#o.pollMs, maxMs: Math.max(this.#o.pollMs, 30_000) },
      outageLoggedElsewhere: true,
      message: 'the webhook outbox cannot be read',
      recovered: 'the webhook outbox is read again',
    });
  }

  /** Counts the outbox's retries in the metric. */
  set retryReport(report: RetryReport) {
    this.#retry.report = report;
  }

  start(): void {
    this.#timer = setInterval(() => {
      if (this.#o.clock() >= this.#notBefore) this.nudge();
    }, this.#o.pollMs);
    this.#timer.unref();
    this.nudge();
  }

  /** Looks for due events now (called after an event is queued). */
  nudge(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#drain().finally(() => {
      this.#running = undefined;
      if (this.#again) {
        this.#again = false;
        this.nudge();
      }
    });
  }

  /** Runs rounds until nothing is due; resolves when idle. */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    await this.idle();
    await this.#agent.close();
  }

  async #drain(): Promise<void> {
    try {
      for (;;) {
        const now = this.#o.clock();
        const events = await this.#o.store.webhooks.claimDue(
          now,
          now + this.#o.timeoutMs + LEASE_MARGIN_MS,
          BATCH,
        );
        this.#retry.succeeded();
        if (events.length === 0) return;
        await Promise.all(events.map((event) => this.#deliver(event)));
      }
    } catch (error) {
      // Once per episode; polls back off meanwhile (a queued event still nudges a round at once).
      const delay = this.#retry.failed(error, error instanceof StoreUnavailableError);
      this.#notBefore = this.#o.clock() + delay;
    }
  }

  async #deliver(event: WebhookEvent): Promise<void> {
    const { store, clock } = this.#o;
    const attempt = event.attempts + 1;
    const endpoint = await store.webhooks.endpoint(event.accountId);
    const started = performance.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    if (!endpoint) {
      error = 'no endpoint configured';
    } else if (!isAllowedPort(new URL(endpoint.url), this.#o.ports)) {
      // Never connected: the log must not tell what answers on a port the operator does not allow.
      error = 'endpoint refused: its port is not allowed';
    } else if (!this.#o.allowPrivate && !isPublicLiteral(new URL(endpoint.url))) {
      // An address written in the URL is never looked up, so the connection's check never sees it; one saved
      // under older rules is judged by today's.
      error = 'endpoint refused: its address is not public';
    } else {
      try {
        const response = await request(endpoint.url, {
          method: 'POST',
          dispatcher: this.#agent,
          headers: deliveryHeaders(event, endpoint.secret, Math.floor(clock() / 1000)),
          body: event.payload,
          signal: AbortSignal.timeout(this.#o.timeoutMs),
        });
        statusCode = response.statusCode;
        await response.body.dump();
      } catch (cause) {
        error =
          (cause as Error).name === 'TimeoutError'
            ? `no answer within ${this.#o.timeoutMs} ms`
            : (cause as Error).message || 'delivery failed';
      }
    }
    const now = clock();
    const delivered = statusCode !== null && statusCode >= 200 && statusCode < 300;
    const next = delivered ? undefined : nextAttemptAt(attempt, now, this.#o.retryDelaysMs);
    const status = delivered ? 'delivered' : next === undefined ? 'failed' : 'pending';
    await store.webhooks.recordAttempt(
      {
        id: newId('whd'),
        eventId: event.id,
        accountId: event.accountId,
        attempt,
        url: endpoint?.url ?? '',
        statusCode,
        error,
        latencyMs: performance.now() - started,
        createdAt: now,
      },
      { status, nextAttemptAt: next ?? now, now },
    );
    if (status === 'failed')
      this.#o.logger.warn({ eventId: event.id, attempts: attempt }, 'webhook event failed for good');
  }
}

/**
 * The spec's signature of the body, and beside it the Standard Webhooks headers, whose signature also covers
 * the event's id and this attempt's time: a receiver can refuse a delivery replayed later and deduplicate on
 * a signed id. The id stays the same on every attempt of an event; the time is each attempt's own.
 */
function deliveryHeaders(event: WebhookEvent, secret: string, sentAt: number): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'Tollgate-Webhooks/1',
    'x-service-signature': signPayload(event.payload, secret),
    'x-service-event-id': event.id,
    'x-service-timestamp': String(sentAt),
    'webhook-id': event.id,
    'webhook-timestamp': String(sentAt),
    'webhook-signature': signStandard(event.id, sentAt, event.payload, secret),
  };
}

/** Whether a URL's host, when it is an address rather than a name, is a public one (a name: true). */
function isPublicLiteral(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return isIP(host) === 0 || isPublicAddress(host);
}
