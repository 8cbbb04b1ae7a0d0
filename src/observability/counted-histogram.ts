import type { Metric, Registry } from 'prom-client';

/** One label set's counts: per bucket (not cumulative; the last is above every bound), their sum and number. */
export class HistogramSeries {
  readonly labels: Readonly<Record<string, string>>;
  readonly #bounds: readonly number[];
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(labels: Readonly<Record<string, string>>, bounds: readonly number[]) {
    this.labels = labels;
    this.#bounds = bounds;
    this.counts = new Array<number>(bounds.length + 1).fill(0);
  }

  /** Counts one value (seconds); a value that is not a finite number is not counted. */
  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

interface HistogramOptions {
  name: string;
  help: string;
  labelNames?: readonly string[];
  buckets: readonly number[];
  registers: Registry[];
}

interface HistogramValue {
  labels: Record<string, string | number>;
  value: number;
  metricName: string;
}

/**
 * A Prometheus histogram kept as plain counts per label set and turned into samples only when a scrape reads it.
 * prom-client's Histogram builds a label key, checks the labels and allocates on every observation; a request
 * observes two or three. Its exposition is the same: each series' cumulative `_bucket` lines (`le` first), `+Inf`,
 * `_sum` and `_count`; a histogram without labels shows its zeros from the start.
 */
export class CountedHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #labelNames: readonly string[];
  readonly #bounds: readonly number[];
  readonly #series = new Map<string, HistogramSeries>();
  /** The one series of a histogram without labels. */
  readonly #unlabelled: HistogramSeries | undefined;

  constructor(options: HistogramOptions) {
    this.name = options.name;
    this.help = options.help;
    this.#labelNames = options.labelNames ?? [];
    this.#bounds = [...options.buckets].sort((a, b) => a - b);
    if (this.#labelNames.length === 0) this.#unlabelled = this.series();
    // The registry reads a metric's name, help, type, aggregator and get(); it needs no more of prom-client's own.
    for (const registry of options.registers) registry.registerMetric(this as unknown as Metric);
  }

  /** The series of these label values (in labelNames' order), made on first use: keep it to observe into. */
  series(...values: string[]): HistogramSeries {
    if (values.length !== this.#labelNames.length)
      throw new Error(`${this.name} has ${this.#labelNames.length} labels, not ${values.length}`);
    const key = values.join('\u0000');
    let series = this.#series.get(key);
    if (series === undefined) {
      const labels: Record<string, string> = {};
      this.#labelNames.forEach((name, i) => (labels[name] = values[i]!));
      series = new HistogramSeries(labels, this.#bounds);
      this.#series.set(key, series);
    }
    return series;
  }

  /** Observes into the histogram without labels. */
  observe(value: number): void {
    if (this.#unlabelled === undefined) throw new Error(`${this.name} has labels: observe through series()`);
    this.#unlabelled.observe(value);
  }

  /** The samples a scrape shows, as prom-client's metrics give them. */
  get(): Promise<{
    name: string;
    help: string;
    type: string;
    aggregator: string;
    values: HistogramValue[];
  }> {
    const values: HistogramValue[] = [];
    for (const series of this.#series.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.#bounds.length; i++) {
        cumulative += series.counts[i]!;
        values.push({
          labels: { le: this.#bounds[i]!, ...series.labels },
          value: cumulative,
          metricName: `${this.name}_bucket`,
        });
      }
      values.push(
        { labels: { le: '+Inf', ...series.labels }, value: series.count, metricName: `${this.name}_bucket` },
        { labels: { ...series.labels }, value: series.sum, metricName: `${this.name}_sum` },
        { labels: { ...series.labels }, value: series.count, metricName: `${this.name}_count` },
      );
    }
    return Promise.resolve({
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    });
  }

  /** Forgets every count (prom-client's reset, which registry.resetMetrics calls). */
  reset(): void {
    for (const series of this.#series.values()) {
      series.counts.fill(0);
      series.sum = 0;
      series.count = 0;
    }
  }
}
