import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Histogram, Registry } from 'prom-client';
import { CountedHistogram } from './counted-histogram.ts';
import { Metrics } from './metrics.ts';

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
// On a bound, between bounds, below the first, above the last.
const VALUES = [0.005, 0.0071, 0.000_2, 0.3, 1, 61, 2.5, 0.049];

/** The same histogram as prom-client's and as a CountedHistogram, each in a registry of its own. */
function pair(labelNames: string[]) {
  const reference = new Registry();
  const counted = new Registry();
  const options = { name: 'h_seconds', help: 'a histogram', labelNames, buckets: BUCKETS };
  return {
    prom: new Histogram({ ...options, registers: [reference] }),
    ours: new CountedHistogram({ ...options, registers: [counted] }),
    scrape: async () => [await reference.metrics(), await counted.metrics()] as const,
  };
}

describe('CountedHistogram', () => {
  it('scrapes exactly as prom-client’s Histogram given the same observations, series by series', async () => {
    const { prom, ours, scrape } = pair(['model', 'provider']);
    for (const [i, value] of VALUES.entries()) {
      const labels = i % 3 === 0 ? ['model-a', 'up"stream\\1'] : ['model-b', 'mock'];
      prom.labels(...labels).observe(value);
      ours.series(...labels).observe(value);
    }
    const [expected, actual] = await scrape();
    assert.equal(actual, expected);
    assert.match(actual, /h_seconds_bucket\{le="0.005",model="model-b",provider="mock"\} 1\n/);
  });

  it('without labels shows its zeros before any observation, then counts as prom-client does', async () => {
    const { prom, ours, scrape } = pair([]);
    let [expected, actual] = await scrape();
    assert.equal(actual, expected);
    assert.match(actual, /h_seconds_count 0/);
    for (const value of VALUES) {
      prom.observe(value);
      ours.observe(value);
    }
    [expected, actual] = await scrape();
    assert.equal(actual, expected);
    assert.match(actual, /h_seconds_count 8/);
  });

  it('counts nothing for a value that is not a finite number', async () => {
    const { ours } = pair([]);
    ours.observe(Number.NaN);
    ours.observe(Number.POSITIVE_INFINITY);
    const { values } = await ours.get();
    assert.equal(values.find((v) => v.metricName === 'h_seconds_count')?.value, 0);
  });

  it('refuses label values that do not match its label names', () => {
    const { ours } = pair(['model', 'provider']);
    assert.throws(() => ours.series('model-a'), /2 labels, not 1/);
    assert.throws(() => ours.observe(1), /observe through series/);
  });
});

describe('Metrics histograms', () => {
  it('show a request’s duration and a stream’s time to first token by model and provider', async () => {
    const metrics = new Metrics();
    metrics.recordRequest('model-x', 'mock', 'ok', 0.2, null, 10, 5);
    metrics.recordRequest('model-x', 'mock', 'ok', 0.02, 0.004, 10, 5);
    metrics.overhead.observe(0.0003);
    const text = await metrics.registry.metrics();
    assert.match(
      text,
      /tollgate_chat_request_duration_seconds_bucket\{le="0.025",model="model-x",provider="mock"\} 1\n/,
    );
    assert.match(text, /tollgate_chat_request_duration_seconds_count\{model="model-x",provider="mock"\} 2\n/);
    assert.match(
      text,
      /tollgate_chat_time_to_first_token_seconds_count\{model="model-x",provider="mock"\} 1\n/,
    );
    assert.match(text, /tollgate_gateway_overhead_seconds_bucket\{le="0.0005"\} 1\n/);
    assert.match(text, /tollgate_chat_requests_total\{model="model-x",provider="mock",status="ok"\} 2\n/);
  });
});
