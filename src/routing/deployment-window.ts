/** Thirty-second slots, ten of them: the window is the last five minutes. */
const SLOT_MS = 30_000;
const SLOTS = 10;
/** Latency buckets a factor √2 apart from 1 ms: bucket 31 holds everything from about 46 s. */
const BUCKETS = 32;

/** One deployment's last five minutes, as the operators' deployments page shows them. */
export interface WindowSnapshot {
  requests: number;
  /** Failed attempts over all attempts, 0 when there were none. */
  errorRate: number;
  /** Medians estimated from √2-wide buckets (within about ±19 %), null with no sample. */
  latencyP50Ms: number | null;
  ttftP50Ms: number | null;
}

/** Attempts and failed attempts in the window: what a model's state needs, without the latencies. */
export interface WindowCounts {
  requests: number;
  errors: number;
}

const bucketOf = (ms: number): number =>
  Math.min(BUCKETS - 1, Math.max(0, Math.floor(2 * Math.log2(Math.max(ms, 1)))));

/**
 * A rolling five-minute window of one deployment's attempts: outcome counts and latency histograms in
 * typed arrays allocated once, so recording an attempt allocates nothing (it runs on every request).
 */
export class DeploymentWindow {
  readonly #slotIndex = new Float64Array(SLOTS).fill(-1);
  readonly #requests = new Uint32Array(SLOTS);
  readonly #errors = new Uint32Array(SLOTS);
  readonly #latency = new Uint32Array(SLOTS * BUCKETS);
  readonly #ttft = new Uint32Array(SLOTS * BUCKETS);

  /** Counts one attempt at `now` (ms); a whole answer gives its latency, a stream its time to first chunk. */
  record(now: number, ok: boolean, latencyMs?: number, ttftMs?: number): void {
    const slot = this.#slot(now);
    this.#requests[slot]! += 1;
    if (!ok) this.#errors[slot]! += 1;
    if (latencyMs !== undefined) this.#latency[slot * BUCKETS + bucketOf(latencyMs)]! += 1;
    if (ttftMs !== undefined) this.#ttft[slot * BUCKETS + bucketOf(ttftMs)]! += 1;
  }

  snapshot(now: number): WindowSnapshot {
    const current = Math.floor(now / SLOT_MS);
    let requests = 0;
    let errors = 0;
    const latency = new Array<number>(BUCKETS).fill(0);
    const ttft = new Array<number>(BUCKETS).fill(0);
    for (let slot = 0; slot < SLOTS; slot++) {
      if (!this.#inWindow(slot, current)) continue;
      requests += this.#requests[slot]!;
      errors += this.#errors[slot]!;
      for (let bucket = 0; bucket < BUCKETS; bucket++) {
        latency[bucket]! += this.#latency[slot * BUCKETS + bucket]!;
        ttft[bucket]! += this.#ttft[slot * BUCKETS + bucket]!;
      }
    }
    return {
      requests,
      errorRate: requests === 0 ? 0 : Math.round((errors / requests) * 1000) / 1000,
      latencyP50Ms: median(latency),
      ttftP50Ms: median(ttft),
    };
  }

  /** The window's attempts and failures (exact counts), summed without touching the latency histograms. */
  counts(now: number): WindowCounts {
    const current = Math.floor(now / SLOT_MS);
    let requests = 0;
    let errors = 0;
    for (let slot = 0; slot < SLOTS; slot++) {
      if (!this.#inWindow(slot, current)) continue;
      requests += this.#requests[slot]!;
      errors += this.#errors[slot]!;
    }
    return { requests, errors };
  }

  /** Whether the slot holds one of the last ten half-minutes up to `current`. */
  #inWindow(slot: number, current: number): boolean {
    const index = this.#slotIndex[slot]!;
    return index > current - SLOTS && index <= current;
  }

  /** The slot for `now`, emptied first when it last held an older half-minute. */
  #slot(now: number): number {
    const index = Math.floor(now / SLOT_MS);
    const slot = index % SLOTS;
    if (this.#slotIndex[slot] !== index) {
      this.#slotIndex[slot] = index;
      this.#requests[slot] = 0;
      this.#errors[slot] = 0;
      this.#latency.fill(0, slot * BUCKETS, (slot + 1) * BUCKETS);
      this.#ttft.fill(0, slot * BUCKETS, (slot + 1) * BUCKETS);
    }
    return slot;
  }
}

/** The median of a √2 histogram: the geometric middle of the bucket that holds it, rounded to 0.1 ms. */
function median(buckets: readonly number[]): number | null {
  const total = buckets.reduce((sum, n) => sum + n, 0);
  if (total === 0) return null;
  let seen = 0;
  for (let bucket = 0; bucket < BUCKETS; bucket++) {
    seen += buckets[bucket]!;
    if (seen * 2 >= total) return Math.round(2 ** ((bucket + 0.5) / 2) * 10) / 10;
  }
  return null;
}
