import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Settlement } from '../../core/records.ts';
import { EventQueue } from './event-queue.ts';
import { type EventSettings, eventSettings } from './event-settings.ts';

/** One event per finished request, to stdout or an HTTP receiver; off unless TOLLGATE_REQUEST_EVENTS names one. */
export interface RequestEvents {
  /** Queues the finished request's event (the usage record's fields, never content); returns at once. */
  record(settlement: Settlement): void;
  /** Sends what is queued (one attempt per batch), then stops. */
  close(): Promise<void>;
}

export interface RequestEventsIo {
  /** Where `stdout` events are written. */
  stdout?: NodeJS.WritableStream;
  fetch?: typeof fetch;
}

const SEND_TIMEOUT_MS = 10_000;

export function createRequestEvents(
  env: Readonly<Record<string, string | undefined>>,
  registry: Registry,
  logger: Logger,
  io: RequestEventsIo = {},
): RequestEvents | undefined {
  const settings = eventSettings(env);
  if (!settings) return undefined;
  const dropped = new Counter({
    name: 'tollgate_request_events_dropped_total',
    help: 'Request events dropped: pushed out of a full queue, or their batch failed every attempt',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  dropped.inc({ reason: 'queue_full' }, 0);
  dropped.inc({ reason: 'send_failed' }, 0);
  const queue = new EventQueue({
    send: settings.target === 'stdout' ? stdoutSender(io.stdout ?? process.stdout) : httpSender(settings, io),
    batchSize: settings.batchSize,
    maxQueue: settings.maxQueue,
    intervalMs: settings.intervalMs,
    maxAttempts: settings.maxAttempts,
    onDropped(count, reason) {
      dropped.inc({ reason }, count);
      logger.warn({ count, reason }, 'request events dropped');
    },
  });
  new Gauge({
    name: 'tollgate_request_events_queued',
    help: 'Request events waiting to be sent',
    registers: [registry],
    collect() {
      this.set(queue.length);
    },
  });
  const where = settings.target === 'stdout' ? 'stdout' : settings.target.origin;
  logger.info({ target: where }, 'request events are sent');
  return {
    record: (settlement) => queue.add(JSON.stringify(eventOf(settlement))),
    close: () => queue.close(),
  };
}

/** The event of a finished request: the usage record's fields, in the API's snake_case. */
export function eventOf(settlement: Settlement): Record<string, unknown> {
  return {
    type: 'request.finished',
    request_id: settlement.requestId,
    account_id: settlement.accountId,
    key_id: settlement.keyId,
    model: settlement.model,
    deployment: settlement.deployment,
    status: settlement.status,
    prompt_tokens: settlement.promptTokens,
    completion_tokens: settlement.completionTokens,
    total_tokens: settlement.promptTokens + settlement.completionTokens,
    estimated: settlement.estimated,
    cost_micros: settlement.costMicros,
    latency_ms: Math.round(settlement.latencyMs * 1000) / 1000,
    ttft_ms: settlement.ttftMs === null ? null : Math.round(settlement.ttftMs * 1000) / 1000,
    created_at: new Date(settlement.createdAt).toISOString(),
  };
}

/** JSON lines, one write per batch; a full pipe is waited out (the queue bounds what waits meanwhile). */
function stdoutSender(out: NodeJS.WritableStream) {
  return (lines: readonly string[]): Promise<'sent'> =>
    new Promise((resolve) => {
      if (out.write(`${lines.join('\n')}\n`)) resolve('sent');
      else out.once('drain', () => resolve('sent'));
    });
}

/** A JSON array per POST; 2xx is sent, 408, 429 and 5xx are retried, any other status drops the batch. */
function httpSender(settings: EventSettings, io: RequestEventsIo) {
  const post = io.fetch ?? fetch;
  const url = settings.target as URL;
  return async (lines: readonly string[]): Promise<'sent' | 'retry' | 'rejected'> => {
    const response = await post(url, {
      method: 'POST',
      headers: { ...settings.headers, 'content-type': 'application/json' },
      body: `[${lines.join(',')}]`,
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
    });
    await response.body?.cancel();
    if (response.ok) return 'sent';
    return response.status === 408 || response.status === 429 || response.status >= 500
      ? 'retry'
      : 'rejected';
  };
}
