// CPU of the observability work one request adds, in process, apart from the HTTP path:
// `node bench/trace-cost.ts` prints (1) with tracing off, the finished-request hook (revenue and the by-deployment
// histograms) and the untraced checks; (2) with tracing on at 100% sampling, one request's whole trace (its span, one
// attempt span, every attribute, the traceparent made for the upstream) including its share of the batched OTLP
// protobuf export to a local sink that answers 200. Process CPU (user + system) over many requests.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { Router } from '../src/routing/router.ts';
import { registerStateGauges, type StateParts } from '../src/observability/state-gauges.ts';
import { createTracing } from '../src/observability/tracing/tracing.ts';
import type { Settlement } from '../src/core/records.ts';

const settlement: Settlement = {
  ...{
    requestId: 'req_1',
    accountId: 'acct_1',
    keyId: 'key_1',
    model: 'model-b',
    deployment: 'mock/mock-model',
  },
  ...{ promptTokens: 12, completionTokens: 16, estimated: false, costMicros: 52, status: 'ok' },
  ...{ latencyMs: 1.2, ttftMs: 0.8, createdAt: Date.now() },
};

const cpuMicros = (): number => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

function perCall(n: number, work: () => void): number {
  const from = cpuMicros();
  for (let i = 0; i < n; i++) work();
  return ((cpuMicros() - from) * 1000) / n;
}

const parts = { router: {} as Router } as StateParts;
const finished = registerStateGauges(new Registry(), parts);
const ctx: { trace?: { finished(s: Settlement): void } | undefined } = {};
for (let round = 1; round <= 3; round++) {
  const hook = perCall(2_000_000, () => finished(settlement));
  const checks = perCall(20_000_000, () => ctx.trace?.finished(settlement));
  console.log(
    `tracing off, round ${round}: finished-request hook ${hook.toFixed(0)} ns, one untraced check ${checks.toFixed(1)} ns`,
  );
}

let exported = 0;
const sink = createServer((req, res) => {
  req.on('data', (piece: Buffer) => (exported += piece.length));
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
});
await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
const tracing = createTracing(
  {
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(sink.address() as AddressInfo).port}`,
    OTEL_TRACES_SAMPLER: 'always_on',
    OTEL_BSP_SCHEDULE_DELAY: '200',
  },
  new Map([['mock', 'openai']]),
  pino({ level: 'silent' }),
  'bench',
)!;
const headers = { 'content-type': 'application/json', authorization: 'Bearer x' };
const request = { model: 'model-b', maxTokens: 16, temperature: 0.5 };
const oneRequest = (): void => {
  const trace = tracing.start(headers, '/v1/chat/completions', 'req_1', performance.now());
  trace.requested(request, 'acct_1', 'key_1');
  trace.admitted(0.01);
  const watch = trace.attempt('mock/mock-model', 'mock', 0);
  if (!watch.headers['traceparent']) throw new Error('no traceparent');
  watch.succeeded();
  trace.answered({ id: 'chatcmpl-1', model: 'mock-model', finishReasons: ['stop'] });
  trace.finished(settlement);
  trace.end();
};
for (let round = 1; round <= 3; round++) {
  // In batches of 500 with a turn between, so the batch processor's exports run as they would beside requests.
  const from = cpuMicros();
  const n = 20_000;
  for (let done = 0; done < n; done += 500) {
    for (let i = 0; i < 500; i++) oneRequest();
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const micros = (cpuMicros() - from) / n;
  console.log(`tracing on (100%), round ${round}: ${micros.toFixed(1)} µs CPU per request, export included`);
}
await tracing.close();
console.log(`exported ${(exported / 1024 / 1024).toFixed(1)} MiB of OTLP protobuf`);
sink.close();
