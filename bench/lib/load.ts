import { Pool } from 'undici';

export interface Target {
  name: string;
  origin: string;
  path: string;
  headers: Record<string, string>;
  /** The gateway process (and its children) whose CPU is measured; none for the direct mock. */
  pid?: number;
}

export const CHAT_BODY = {
  model: 'model-b',
  max_tokens: 16,
  messages: [{ role: 'user', content: 'Say hello in five words.' }],
};

const percentile = (sorted: readonly number[], p: number): number =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

export function summarize(values: number[]): { p50: number; p99: number; max: number; count: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? NaN,
    count: sorted.length,
  };
}

/** One request; its status once its answer is read. */
export async function send(pool: Pool, target: Target, body: string): Promise<number> {
  const response = await pool.request({
    path: target.path,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...target.headers },
    body,
  });
  await response.body.text();
  return response.statusCode;
}

/**
 * Back-to-back requests on `connections` connections for `durationMs`: throughput and status counts. A streamed
 * `request` is read to its end, so a request is a whole stream.
 */
export async function closedLoop(
  target: Target,
  connections: number,
  durationMs: number,
  request: object = CHAT_BODY,
): Promise<{ requests: number; non200: number; seconds: number }> {
  const pool = new Pool(target.origin, { connections, pipelining: 1 });
  const body = JSON.stringify(request);
  const stopAt = performance.now() + durationMs;
  let requests = 0;
  let non200 = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < stopAt) {
        const status = await send(pool, target, body).catch(() => 0);
        requests += 1;
        if (status !== 200) non200 += 1;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await pool.close();
  return { requests, non200, seconds };
}

/** Requests sent at a fixed rate whatever the answers do (open loop): latency from the scheduled send. */
export async function openLoop(
  target: Target,
  connections: number,
  ratePerSecond: number,
  durationMs: number,
): Promise<{ latencies: number[]; non200: number }> {
  const pool = new Pool(target.origin, { connections, pipelining: 1 });
  const body = JSON.stringify(CHAT_BODY);
  const total = Math.round((ratePerSecond * durationMs) / 1000);
  const latencies: number[] = [];
  let non200 = 0;
  const start = performance.now() + 5;
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / ratePerSecond;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait - 0.5));
    while (performance.now() < due) {
      // spin the last half millisecond for an accurate send time
    }
    pending.push(
      send(pool, target, body)
        .then((status) => {
          latencies.push(performance.now() - due);
          if (status !== 200) non200 += 1;
        })
        .catch(() => void (non200 += 1)),
    );
  }
  await Promise.all(pending);
  await pool.close();
  return { latencies, non200 };
}

export interface StreamStats {
  ttft: number[];
  gaps: number[];
  events: number[];
  /** The most content events that arrived in one read: more than 1 means chunks were batched. */
  maxEventsPerRead: number;
  non200: number;
  completed: number;
}

/** `count` streamed requests, `concurrency` at a time; times the first content chunk and the gaps between chunks. */
export async function streams(
  target: Target,
  count: number,
  concurrency: number,
  extra: Record<string, unknown> = {},
): Promise<StreamStats> {
  const pool = new Pool(target.origin, { connections: concurrency, pipelining: 1 });
  const body = JSON.stringify({ ...CHAT_BODY, stream: true, ...extra });
  const stats: StreamStats = { ttft: [], gaps: [], events: [], maxEventsPerRead: 0, non200: 0, completed: 0 };
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        next += 1;
        await oneStream(pool, target, body, stats).catch(() => void (stats.non200 += 1));
      }
    }),
  );
  await pool.close();
  return stats;
}

/** Reads one stream; `marker` is what starts a content chunk's text in what the client reads. */
export async function oneStream(
  pool: Pool,
  target: Target,
  body: string,
  stats: StreamStats,
  marker = '"content":" t',
): Promise<void> {
  const sent = performance.now();
  const response = await pool.request({
    path: target.path,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...target.headers },
    body,
  });
  if (response.statusCode !== 200) {
    stats.non200 += 1;
    await response.body.text();
    return;
  }
  let first = 0;
  let last = 0;
  let events = 0;
  for await (const piece of response.body) {
    const text = piece.toString();
    const contentEvents = text.split(marker).length - 1;
    if (contentEvents === 0) continue;
    const now = performance.now();
    if (first === 0) {
      first = now;
      stats.ttft.push(now - sent);
    } else {
      stats.gaps.push(now - last);
    }
    last = now;
    events += contentEvents;
    stats.maxEventsPerRead = Math.max(stats.maxEventsPerRead, contentEvents);
  }
  stats.events.push(events);
  stats.completed += 1;
}
